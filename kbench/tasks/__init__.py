"""Evaluation tasks that live in one folder each (`kbench/tasks/<name>/`): settings, plan, score,
aggregate, protocol, report section and command line side by side. `TASKS` and the evaluate
commands discover them here as they do in `kbench.evaluate` (docs/adding-a-task.md)."""
