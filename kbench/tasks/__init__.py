"""The evaluation tasks, one folder each (`kbench/tasks/<name>/`): settings, plan, score, aggregate,
protocol, the metrics only that task uses, its report section and legacy reader, and its command
line side by side. `TASKS` and the evaluate commands discover them here (docs/adding-a-task.md);
what two tasks share stays outside: the engine (`kbench.evaluate`), `kbench.metrics`, the report frame."""
