"""The evaluation tasks, one folder each (`kbench/tasks/<name>/`): settings, plan, score, aggregate,
protocol, the metrics only that task uses, its report section and legacy reader side by side; the
folder's name is the task's. `TASKS` finds each folder's `task.py` here, and `kbench evaluate <name>`
is generated from the task's Settings unless its folder has a `cli.py` (docs/adding-a-task.md);
what two tasks share stays outside: the engine (`kbench.evaluate`), `kbench.metrics`, the report frame."""
