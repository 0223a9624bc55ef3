"""PNG charts of the report (matplotlib, Agg backend: no display needed).

Every bar is an Estimate: drawn with its 95% interval as an error bar when it has one, and faded
when its n is below 30 (the tables mark the same cells with `*`). One colour per run, so a chart is
"model vs model" as soon as there are two runs. Each function writes its chart atomically and
returns the file name, or None when no run has the data for it.
"""

from __future__ import annotations

from pathlib import Path

from kbench.io import atomic_path
from kbench.metrics.uncertainty import is_small
from kbench.report.runs import Run, is_estimate, order_bins

SMALL_NOTE = "faded bars: n < 30"


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_chart(fig, out_dir: Path, name: str) -> str:
    with atomic_path(out_dir / name) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    pyplot().close(fig)
    return name


def estimate_bars(ax, positions, estimates, width, label, horizontal, colour=None):
    heights = [e["value"] if e and e.get("value") is not None else float("nan") for e in estimates]
    # max(0, ...): a Wilson bound equals the value at k = 0 or k = n, up to float noise
    errors = [
        [max(0.0, h - e["ci_low"]) if e and e.get("ci_low") is not None else 0 for h, e in zip(heights, estimates)],
        [max(0.0, e["ci_high"] - h) if e and e.get("ci_high") is not None else 0 for h, e in zip(heights, estimates)],
    ]
    draw = ax.barh if horizontal else ax.bar
    bars = draw(
        positions,
        heights,
        width,
        label=label,
        color=colour,
        **({"xerr": errors} if horizontal else {"yerr": errors}),
        error_kw={"elinewidth": 1, "capsize": 2},
    )
    for bar, e in zip(bars, estimates):
        if e and is_small(e):
            bar.set_alpha(0.4)


def grouped_bars(
    out_dir: Path,
    name: str,
    title: str,
    categories: list[str],
    series: list[tuple[str, dict]],
    *,
    horizontal: bool,
    axis: str,
    names: dict[str, str] | None = None,
) -> str:
    """One group of bars per category, one bar per (label, {category: Estimate}) series."""
    plt = pyplot()
    names = names or {}
    width = 0.8 / len(series)
    size = (
        (8, max(2.5, 0.3 * len(categories) * max(1, len(series) * 0.6) + 1))
        if horizontal
        else (max(5, 1.2 * len(categories) + 2), 4)
    )
    fig, ax = plt.subplots(figsize=size)
    for i, (label, table) in enumerate(series):
        positions = [c + (i - (len(series) - 1) / 2) * width for c in range(len(categories))]
        estimate_bars(ax, positions, [table.get(c) for c in categories], width, label, horizontal, colour=f"C{i}")
    ticks = [names.get(c, c) for c in categories]
    if horizontal:
        ax.set_yticks(range(len(categories)), ticks)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"{axis} (95% interval; {SMALL_NOTE})")
    else:
        ax.set_xticks(range(len(categories)), ticks, rotation=20 if len(categories) > 4 else 0)
        ax.set_ylim(0, 1)
        ax.set_ylabel(axis)
        ax.set_xlabel(f"95% interval; {SMALL_NOTE}")
    ax.set_title(title)
    ax.grid(axis="x" if horizontal else "y", alpha=0.3)
    if len(series) > 1:  # legend patches at full colour, whatever the first bar's n
        from matplotlib.patches import Patch

        ax.legend(
            handles=[Patch(color=f"C{i}", label=label) for i, (label, _) in enumerate(series)], fontsize="small", loc="best"
        )
    return save_chart(fig, out_dir, name)


def _column(table: dict[str, dict], preferred: str | None) -> str | None:
    """The metric a breakdown chart draws: the run's primary metric when the table has it, else
    the first proportion-like Estimate column (values within [0, 1])."""
    columns = list(dict.fromkeys(c for row in table.values() for c, v in row.items() if is_estimate(v)))
    if preferred in columns:
        return preferred
    return next((c for c in columns if all(0 <= (row[c].get("value") or 0) <= 1 for row in table.values() if c in row)), None)


def breakdown_chart(runs: list[Run], out_dir: Path, kind: str, name: str, title: str) -> str | None:
    series, metrics = [], []
    for run in runs:
        table = run.table(kind)
        column = _column(table, run.primary)
        if column:
            series.append((run.label, {row: cells[column] for row, cells in table.items() if column in cells}))
            metrics.append(column)
    if not series:
        return None
    categories = (
        order_bins({c for _, t in series for c in t})
        if kind == "per_frequency_bin"
        else sorted({c for _, t in series for c in t})
    )
    names = {}
    if kind == "per_relation":
        for run in runs:
            names.update({r: run.relation_name(r) for r in categories if r in run.relation_labels})
    axis = " / ".join(dict.fromkeys(metrics))
    return grouped_bars(
        out_dir, name, f"{title}: {axis}", categories, series, horizontal=kind == "per_relation", axis=axis, names=names
    )


def comparison_chart(comparisons, out_dir: Path) -> str | None:
    """Each task's runs on their shared items (KEE: the baseline technique), with intervals."""
    categories, series = [], {}
    for c in comparisons:
        group = next(iter(c.groups), None)
        if group is None:
            continue
        category = f"{c.task}{f' ({group})' if group else ''}\nn = {c.n_shared} shared"
        categories.append(category)
        for label, estimate in c.groups[group]["accuracy"].items():
            series.setdefault(label, {})[category] = estimate
    if not categories:
        return None
    return grouped_bars(
        out_dir,
        "model_comparison.png",
        "Models on their shared items",
        categories,
        list(series.items()),
        horizontal=False,
        axis="accuracy on shared items",
    )
