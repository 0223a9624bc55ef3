"""`kbench evaluate qa`: knowledge-update QA (EvolvingQA).

task.py     Settings and the Task (plan, score, aggregate, protocol)
metrics.py  the answer scorers by name (`SCORERS`: the official EM/F1 and the card's)
"""

from kbench.tasks.qa import task as task  # registers "qa" in TASKS
