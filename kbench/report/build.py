"""`build_report(run_dirs, out_dir)`: the static report of one or more evaluation runs.

Writes into OUT, atomically, file by file:
- `index.html`: summary, paired model comparison, charts and every metric table (`page`);
- `explorer-<i>.html`: the item explorer of each run that has a per-item table (`explorer`);
- `comparison.md`: the paired comparison on shared items, when two runs share a task (`compare`);
- the files a task writes about its runs together (`Task.report_files`: LEFT's `left_settings.md`);
- the PNG charts (`plots`); a chart no run has data for is not drawn.
Returns the index path. Every run is read (and its protocol block checked) before anything is
written, so a bad results file leaves OUT as it was. `echo` receives the lines a terminal shows:
each run's protocol and each comparison that is not like for like.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kbench.errors import UserError
from kbench.io import write_text
from kbench.report import compare, plots
from kbench.report.compare import Comparison
from kbench.report.explorer import write_explorer
from kbench.report.items import attach_relation_labels, dataset_rows, read_items
from kbench.report.page import render_page
from kbench.report.protocols import block_lines
from kbench.report.runs import Run, load_runs, task_class


def terminal_lines(runs: list[Run], comparisons: list[Comparison], notes: list[str]) -> list[str]:
    lines = []
    for run in runs:
        first, *deviations = block_lines(run.protocol)
        lines += [f"{run.label} ({run.task}): {first}", *deviations]
    for c in comparisons:
        if c.protocol_differences:
            lines.append(f"warning: the {c.task} comparison is not like for like, the runs' protocols differ:")
            lines += [f"  - {line}" for line in c.protocol_differences]
    lines += [f"warning: {note}" for note in notes if "not like for like" in note]
    return lines


def build_report(
    run_dirs: list[Path],
    out_dir: Path,
    relations_file: Path | None = None,
    echo: Callable[[str], None] | None = None,
) -> Path:
    if not run_dirs:
        raise UserError("give at least one run directory (it holds results.json)")
    if relations_file is not None and not relations_file.is_file():
        raise UserError(f"--relations {relations_file}: no such file")
    runs = load_runs(run_dirs)
    items = [read_items(run.path) for run in runs]
    comparisons, notes = compare.compare_runs(runs, items)  # refuses disjoint runs before writing anything
    out_dir.mkdir(parents=True, exist_ok=True)
    explorers = {}
    for i, (run, rows) in enumerate(zip(runs, items), 1):
        dataset = dataset_rows(run)
        attach_relation_labels(run, rows, dataset, relations_file)
        if rows:
            explorers[run.label] = write_explorer(run, rows, dataset, out_dir, f"explorer-{i}.html")
    if comparisons or notes:
        write_text(out_dir / "comparison.md", compare.markdown(comparisons, notes))
    task_charts = []
    for task in dict.fromkeys(run.task for run in runs):  # a task's own files and charts about its runs together
        cls = task_class(task)
        members = [i for i, run in enumerate(runs) if run.task == task]
        if cls is not None:
            cls().report_files([runs[i] for i in members], [items[i] for i in members], out_dir)
            task_charts += cls().report_charts([runs[i] for i in members], out_dir)
    charts = {
        "models": plots.comparison_chart(comparisons, out_dir),
        "relations": plots.breakdown_chart(runs, out_dir, "per_relation", "per_relation.png", "Per relation"),
        "bins": plots.breakdown_chart(runs, out_dir, "per_frequency_bin", "per_frequency_bin.png", "Per frequency bin"),
    }
    index = out_dir / "index.html"
    write_text(index, render_page(runs, explorers, charts, task_charts, comparisons, notes))
    for line in terminal_lines(runs, comparisons, notes) if echo else ():
        echo(line)
    return index
