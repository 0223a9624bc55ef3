"""`kbench evaluate truefalse`: LEFT's true/false statements in three settings.

task.py      Settings and the Task (plan, score, aggregate)
protocol.py  where a run departs from LEFT (the BoolQ prior checkpoint)
report.py    the open book - closed book comparison of paired runs (`left_settings.md`)
export.py    its datasets as lm-eval tasks (`kbench export lm-eval`)
"""

from kbench.tasks.truefalse import task as task  # registers "truefalse" in TASKS
