"""Evaluation: the engine (`engine`), the tasks and their techniques.

`kbench.evaluate(task, dataset=..., model=..., **settings)` calls `kbench.api.evaluate`: this
package is also that function (see kbench/api.py for why).
"""

from kbench.api import make_callable

make_callable(__name__)
