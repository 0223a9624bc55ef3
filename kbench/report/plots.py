"""PNG charts of the report (matplotlib, Agg backend: no display needed).

Each function draws one chart for all runs at once (one bar colour per run, so a chart is
"model vs model" as soon as there are two runs), writes it atomically and returns its file name,
or None when no run has the data for it.
"""

from __future__ import annotations

from pathlib import Path

from kbench.io import atomic_path
from kbench.report.runs import RunSummary, order_bins

_GAP_COLOURS = {"usable_knowledge": "#2a9d8f", "gap2": "#e9c46a", "gap1": "#e76f51"}
_GAP_NAMES = {"usable_knowledge": "usable (acc_D × downstream)", "gap2": "gap 2: known, not used",
              "gap1": "gap 1: not known (1 − acc_D)"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, out_dir: Path, name: str) -> str:
    with atomic_path(out_dir / name) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    _pyplot().close(fig)
    return name


def _grouped_bars(out_dir: Path, name: str, title: str, categories: list[str], labels: list[str],
                  values: list[dict[str, float]], *, horizontal: bool) -> str:
    plt = _pyplot()
    n_runs = len(labels)
    width = 0.8 / n_runs
    size = (7.5, max(2.5, 0.28 * len(categories) * max(1, n_runs * 0.6) + 1)) if horizontal else (max(5, 1.2 * len(categories) + 2), 4)
    fig, ax = plt.subplots(figsize=size)
    for i, (label, table) in enumerate(zip(labels, values)):
        positions = [c + (i - (n_runs - 1) / 2) * width for c in range(len(categories))]
        heights = [table.get(cat, float("nan")) for cat in categories]
        (ax.barh if horizontal else ax.bar)(positions, heights, width, label=label)
    if horizontal:
        ax.set_yticks(range(len(categories)), categories)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("accuracy")
    else:
        ax.set_xticks(range(len(categories)), categories)
        ax.set_ylim(0, 1)
        ax.set_ylabel("accuracy")
    ax.set_title(title)
    ax.grid(axis="x" if horizontal else "y", alpha=0.3)
    if n_runs > 1:
        ax.legend(fontsize="small", loc="best")
    return _save(fig, out_dir, name)


def _having(runs: list[RunSummary], labels: list[str], attr: str) -> tuple[list[str], list[dict[str, float]]]:
    """Only the runs that have this table: a run without it would add an empty legend entry."""
    pairs = [(label, getattr(run, attr)) for label, run in zip(labels, runs) if getattr(run, attr)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def relation_chart(runs: list[RunSummary], labels: list[str], out_dir: Path) -> str | None:
    names, tables = _having(runs, labels, "per_relation")
    if not tables:
        return None
    relations = sorted({r for t in tables for r in t})
    return _grouped_bars(out_dir, "accuracy_per_relation.png", "Accuracy per relation", relations, names, tables,
                         horizontal=True)


def bin_chart(runs: list[RunSummary], labels: list[str], out_dir: Path) -> str | None:
    names, tables = _having(runs, labels, "per_bin")
    if not tables:
        return None
    bins = order_bins({b for t in tables for b in t})
    return _grouped_bars(out_dir, "accuracy_per_frequency_bin.png", "Accuracy per frequency bin", bins, names, tables,
                         horizontal=False)


def model_chart(runs: list[RunSummary], labels: list[str], out_dir: Path) -> str | None:
    """Model vs model on the headline metrics in [0, 1] that at least two runs share."""
    names, tables = _having(runs, labels, "headline")
    shared = list(dict.fromkeys(k for t in tables for k in t
                                if sum(k in u for u in tables) >= 2 and all(0 <= u.get(k, 0) <= 1 for u in tables)))
    if not shared:
        return None
    keep = [i for i, t in enumerate(tables) if any(k in t for k in shared)]
    return _grouped_bars(out_dir, "model_comparison.png", "Model vs model", shared, [names[i] for i in keep],
                         [tables[i] for i in keep], horizontal=False)


def gap_rows(runs: list[RunSummary], labels: list[str]) -> list[tuple[str, RunSummary, str]]:
    """(row label, run, setting) for every run and XTEVAL setting that has gaps: the chart's bars
    and the table's columns."""
    return [(f"{label} · {setting}" if setting else label, run, setting)
            for label, run in zip(labels, runs) for setting in run.gaps]


def gap_chart(runs: list[RunSummary], labels: list[str], out_dir: Path) -> str | None:
    """XTEVAL: each run's facts split into usable knowledge, gap 2 and gap 1 (they sum to 1)."""
    rows = [(name, run.gaps[setting]) for name, run, setting in gap_rows(runs, labels)
            if {"usable_knowledge", "gap1", "gap2"} <= set(run.gaps[setting])]
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, max(2.2, 0.6 * len(rows) + 1.2)))
    for row, (_, gaps) in enumerate(rows):
        left = 0.0
        for key in ("usable_knowledge", "gap2", "gap1"):
            ax.barh(row, gaps[key], left=left, color=_GAP_COLOURS[key], label=_GAP_NAMES[key] if row == 0 else None)
            if gaps[key] >= 0.06:
                ax.text(left + gaps[key] / 2, row, f"{gaps[key]:.2f}", ha="center", va="center", fontsize="small")
            left += gaps[key]
    ax.set_yticks(range(len(rows)), [name for name, _ in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of facts")
    ax.set_title("Acquisition-utilization gaps (XTEVAL)")
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
    return _save(fig, out_dir, "gaps.png")
