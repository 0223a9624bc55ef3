"""`kbench evaluate extraction`: which facts of a dataset split does a model know (LAMA, MAPLE).

task.py    Settings and the Task (plan, score, aggregate, protocol)
export.py  its datasets as lm-eval and Inspect tasks (`kbench export`)
"""

from kbench.tasks.extraction import task as task  # registers "extraction" in TASKS
