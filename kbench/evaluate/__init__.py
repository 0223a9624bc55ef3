"""Evaluation: the engine (`engine`) and what the tasks share (`task`, `prompts`, `retrieval`,
`departures`); each task lives in its own folder, `kbench/tasks/<name>/`.

`kbench.evaluate(task, dataset=..., model=..., **settings)` calls `kbench.api.evaluate`: this
package is also that function (see kbench/api.py for why).
"""

from kbench import make_callable

make_callable(__name__)
