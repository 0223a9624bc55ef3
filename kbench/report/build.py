"""`build_report(run_dirs, out_dir)`: the static report of one or more evaluation runs.

Writes `OUT/index.html` and the PNG charts beside it (see `plots` and `page`). Every file is
written atomically; charts a run has no data for are simply not drawn. Returns the index path.
"""

from __future__ import annotations

from pathlib import Path

from kbench.errors import UserError
from kbench.io import write_text
from kbench.report import plots
from kbench.report.page import render_page
from kbench.report.runs import load_run, unique_labels


def build_report(run_dirs: list[Path], out_dir: Path) -> Path:
    if not run_dirs:
        raise UserError("give at least one run directory (it holds results.json)")
    runs = [load_run(d) for d in run_dirs]
    labels = unique_labels(runs)
    out_dir.mkdir(parents=True, exist_ok=True)
    charts = {
        "models": plots.model_chart(runs, labels, out_dir),
        "relations": plots.relation_chart(runs, labels, out_dir),
        "bins": plots.bin_chart(runs, labels, out_dir),
        "gaps": plots.gap_chart(runs, labels, out_dir),
    }
    index = out_dir / "index.html"
    write_text(index, render_page(runs, labels, charts))
    return index
