"""`kbench evaluate choice`: lm-pub-quiz's ranked-choice probe (BEAR), in one folder.

    statements.py  the template filled with each candidate, cut where the candidate starts
    answers.py     each relation's answer space: the relation's objects in the split, or a file
    scoring.py     one log-likelihood per candidate, through `LanguageModel.score_answers`
    metrics.py     accuracy and P@k with Wilson intervals, roll-ups, the most-chosen wrong answers
    protocol.py    where a run departs from lm-pub-quiz / BEAR's defaults
    task.py        Settings and the Task (plan, score, aggregate)
    report.py      the report's section: the model's prior bias per relation

docs/adding-a-task.md walks through this folder as the worked example of a new task.
"""

from kbench.tasks.choice import task as task  # registers "choice" in TASKS
