"""`kbench evaluate kee`: knowledge-elicitation techniques against the greedy baseline (MAPLE).

task.py        Settings and the Task (plan, score, aggregate)
techniques/    the techniques, one module each (registered in `TECHNIQUES`)
metrics.py     Acc, Gain, Loss, PRS, SGR/DGR, the ranking's Kendall tau
protocol.py    where a run departs from MAPLE
report.py      the technique comparison (markdown, CSV, charts) a run and `kbench report` write
cli.py         `kbench evaluate kee` and its comparison report
"""

from kbench.tasks.kee import task as task  # registers "kee" in TASKS
