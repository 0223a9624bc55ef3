"""`kbench suite status DIR`: the grid of a suite folder, read from its suite.json.

One row per model, one column per (task, dataset); a finished cell shows its first headline
metric with its 95% interval and n, a failed cell "failed" and its error below the table. When the
grid is wider than the terminal (13 columns in 80 characters would cut every cell to `ac… 0.…`),
one line per cell instead: model, task / dataset, what the grid cell would hold.
"""

from __future__ import annotations

from pathlib import Path

from kbench.errors import UserError
from kbench.io import read_json
from kbench.suite.state import FILE


def read_suite_json(folder: Path) -> dict:
    if not (folder / FILE).is_file():
        raise UserError(f"{folder}: not a suite folder (no {FILE}; run `kbench suite run SUITE.toml --out {folder}`)")
    return read_json(folder / FILE)


def headline_text(headline: dict | None) -> str:
    """The first headline metric: 'name 0.420 [0.351, 0.492] n=200'."""
    from kbench.metrics.uncertainty import format_estimate

    if not headline:
        return "-"
    name, estimate = next(iter(headline.items()))
    return f"{name} {format_estimate(estimate)} n={estimate.get('n')}"


def cell_text(cell: dict | None) -> str:
    if cell is None:
        return ""
    return headline_text(cell["headline"]) if cell["status"] == "done" else cell["status"]


def grid_table(document: dict):
    from rich.table import Table

    cells = document["cells"].values()
    models = list(dict.fromkeys(c["model"] for c in cells))
    columns = list(dict.fromkeys((c["task"], c["dataset"]) for c in cells))
    by_key = {(c["model"], c["task"], c["dataset"]): c for c in cells}
    table = Table(title=f"suite {document['suite']['suite']['name']}")
    table.add_column("model")
    for task, dataset in columns:
        table.add_column(f"{task} / {dataset}")
    for model in models:
        table.add_row(model, *(cell_text(by_key.get((model, task, dataset))) for task, dataset in columns))
    return table


def cell_lines(document: dict) -> list[str]:
    """The grid as one line per cell, aligned: `model  task / dataset  acc 0.420 [0.351, 0.492] n=200`."""
    cells = list(document["cells"].values())
    names = [(c["model"], f"{c['task']} / {c['dataset']}") for c in cells]
    model_width = max((len(m) for m, _ in names), default=0)
    column_width = max((len(c) for _, c in names), default=0)
    return [f"{m:<{model_width}}  {c:<{column_width}}  {cell_text(cell)}".rstrip() for (m, c), cell in zip(names, cells)]


def print_status(folder: Path) -> dict:
    """Print the grid and the failed cells' errors; returns the counts by status."""
    from rich.console import Console
    from rich.measure import Measurement

    document = read_suite_json(folder)
    console = Console()
    table = grid_table(document)
    natural = Measurement.get(console, console.options.update_width(1_000_000), table).maximum  # unwrapped width
    if natural <= console.width:
        console.print(table)
    else:
        console.print(f"suite {document['suite']['suite']['name']} (one line per cell: the grid is wider than the terminal)")
        for line in cell_lines(document):
            console.print(line, markup=False, highlight=False)
    counts: dict[str, int] = {}
    for key, cell in document["cells"].items():
        counts[cell["status"]] = counts.get(cell["status"], 0) + 1
        if cell["status"] == "failed":
            console.print(f"failed {key} ({cell['attempts']} attempts): {cell['error']}", markup=False)
    console.print(", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    return counts
