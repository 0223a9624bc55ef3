"""The suite report's charts (PNG, matplotlib Agg, written atomically as the report's other charts).

- `scaling_chart`: each (task, dataset) column's headline against the model's parameter count
  (log x), with the 95% interval as an error bar, one mark per model, coloured by family.
- `popularity_chart`: accuracy per frequency (popularity) bin, head to tail, one line per model,
  with intervals, as PopQA's and Head-to-Tail's figures draw it.
- `popularity_decile_chart`: accuracy against the items' raw popularity (the `frequency` column the
  frequency_bin stage keeps on every item) in deciles, one line per model with Wilson intervals, as
  PopQA's figures draw it.

Each returns the file name, or None when no cell has the data (no parameter counts, no bins). A chart
holds one panel per (task, dataset) column, wrapped in rows of `PANELS_PER_ROW`: a suite of 12 columns
in one strip made each panel about 100 px wide on the page, too small to read a label.
"""

from __future__ import annotations

from pathlib import Path

from kbench.report.plots import pyplot, save_chart
from kbench.report.runs import BIN_ORDER, Run, is_estimate, order_bins

PANELS_PER_ROW = 3  # a 1,300 px page shows each panel at about 400 px


def _panels(plt, n: int):
    """(figure, its n axes): n panels of 4.6 x 3.8 in, `PANELS_PER_ROW` a row; the last row's spare cells hidden."""
    columns = min(PANELS_PER_ROW, n)
    rows = -(-n // columns)
    # constrained: the rows keep clear of each other (an x label would cross the title of the panel below)
    fig, grid = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.8 * rows), squeeze=False, layout="constrained")
    axes = [ax for row in grid for ax in row]
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _model_colours(drawn: dict[str, dict]) -> dict[str, str]:
    """One colour per model label across every panel (`drawn`: panel title -> model label -> its line)."""
    labels = sorted({label for lines in drawn.values() for label in lines})
    return {label: f"C{i}" for i, label in enumerate(labels)}


def _line(ax, xs: list, estimates: list[dict], colour: str, label: str) -> None:
    """One model's line of estimates with their 95% intervals as error bars."""
    ax.errorbar(xs, [e["value"] for e in estimates], yerr=_errors(estimates), marker="o", capsize=3, color=colour, label=label)


def _size_label(parameters: float) -> str:
    """135M, 1.3B, 70B: a parameter count as a tick label."""
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if parameters >= scale:
            value = parameters / scale
            return f"{value:.0f}{unit}" if value >= 10 else f"{value:.1f}".removesuffix(".0") + unit
    return f"{parameters:g}"


def _errors(estimates: list[dict]) -> list[list[float]]:
    values = [e["value"] for e in estimates]
    return [
        [max(0.0, v - e["ci_low"]) if e.get("ci_low") is not None else 0.0 for v, e in zip(values, estimates)],
        [max(0.0, e["ci_high"] - v) if e.get("ci_high") is not None else 0.0 for v, e in zip(values, estimates)],
    ]


def scaling_chart(columns: dict[str, dict[str, Run]], models: dict[str, dict], out_dir: Path) -> str | None:
    """`columns`: column title -> model label -> its finished run; `models`: the model table."""
    drawn = {
        title: [(label, run) for label, run in runs.items() if (models.get(label) or {}).get("parameters")]
        for title, runs in columns.items()
    }
    drawn = {title: pairs for title, pairs in drawn.items() if pairs}
    if not drawn:
        return None
    plt = pyplot()
    families = sorted({str(models[label].get("family")) for pairs in drawn.values() for label, _ in pairs})
    colour = {family: f"C{i}" for i, family in enumerate(families)}
    fig, axes = _panels(plt, len(drawn))
    for ax, (title, pairs) in zip(axes, drawn.items()):
        metric = pairs[0][1].primary
        for label, run in pairs:
            estimate = run.headline.get(metric) if metric else None
            if estimate is None or not is_estimate(estimate) or estimate.get("value") is None:
                continue
            family = str(models[label].get("family"))
            x = models[label]["parameters"]
            ax.errorbar([x], [estimate["value"]], yerr=_errors([estimate]), fmt="o", color=colour[family], capsize=3)
            ax.annotate(label, (x, estimate["value"]), textcoords="offset points", xytext=(4, 4), fontsize="x-small")
        ax.set_xscale("log")
        sizes = sorted({models[label]["parameters"] for label, _ in pairs})
        ax.minorticks_off()  # log ticks within one decade overlap ("1.4x10^8 1.6x10^8 ..."): one tick per model size
        ax.set_xticks(sizes, [_size_label(n) for n in sizes])
        ax.margins(x=0.15)  # room for the labels of the outermost models
        ax.set_ylim(0, 1)
        ax.set_xlabel("parameters (counted from the weights; log)")
        ax.set_ylabel(f"{metric} (95% interval)")
        ax.set_title(title, fontsize="small")
        ax.grid(alpha=0.3)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", linestyle="", color=colour[f], label=f) for f in families]
    axes[-1].legend(handles=handles, title="family", fontsize="x-small", loc="best")
    fig.suptitle("Scaling: headline against parameter count")
    return save_chart(fig, out_dir, "scaling.png")


def _bin_metric(run: Run) -> str | None:
    """The metric drawn per bin: the run's primary metric when the bin table has it, else the first
    proportion column."""
    table = run.table("per_frequency_bin")
    columns = list(dict.fromkeys(c for row in table.values() for c, v in row.items() if is_estimate(v)))
    if run.primary in columns:
        return run.primary
    return next((c for c in columns if all(0 <= (row[c].get("value") or 0) <= 1 for row in table.values() if c in row)), None)


def popularity_chart(columns: dict[str, dict[str, Run]], out_dir: Path) -> str | None:
    drawn = {}
    for title, runs in columns.items():
        lines = {}
        for label, run in runs.items():
            metric = _bin_metric(run)
            if metric is None:
                continue
            table = run.table("per_frequency_bin")
            lines[label] = (metric, {b: cells[metric] for b, cells in table.items() if is_estimate(cells.get(metric))})
        if lines:
            drawn[title] = lines
    if not drawn:
        return None
    plt = pyplot()
    colour, (fig, axes) = _model_colours(drawn), _panels(plt, len(drawn))
    for ax, (title, lines) in zip(axes, drawn.items()):
        bins = order_bins({b for _, per_bin in lines.values() for b in per_bin})
        for label, (_, per_bin) in lines.items():
            shown = [b for b in bins if per_bin.get(b, {}).get("value") is not None]
            estimates = [per_bin[b] for b in shown]
            _line(ax, [bins.index(b) for b in shown], estimates, colour[label], label)
        ax.set_xticks(range(len(bins)), bins)
        ax.set_ylim(0, 1)
        ax.set_xlabel("popularity bin (head = most popular)" if set(bins) <= set(BIN_ORDER) else "bin")
        ax.set_ylabel(f"{next(iter(lines.values()))[0]} (95% interval)")
        ax.set_title(title, fontsize="small")
        ax.grid(alpha=0.3)
    axes[-1].legend(fontsize="x-small", loc="best")
    fig.suptitle("Accuracy by popularity bin")
    return save_chart(fig, out_dir, "popularity.png")


DECILES = 10


def popularity_deciles(outcomes: dict[str, dict[str, tuple[float, bool]]]) -> dict[str, list[dict]]:
    """Accuracy per popularity decile, as PopQA draws it. `outcomes`: model label -> item id ->
    (raw popularity, correct). The deciles are cut once over the items of all models (ranked by
    popularity, then id, so ties split deterministically), so every model's line shares its bins.
    Returns label -> one entry per decile: {decile, low, high (popularity range), value, ci_low,
    ci_high, n} (value None where the model has no item in that decile)."""
    from kbench.metrics.uncertainty import proportion

    popularity = {item: value for per_item in outcomes.values() for item, (value, _) in per_item.items()}
    ranked = sorted(popularity, key=lambda item: (popularity[item], item))
    decile = {item: rank * DECILES // len(ranked) for rank, item in enumerate(ranked)}
    ranges: dict[int, tuple[float, float | None]] = {}
    for item in ranked:
        low, _ = ranges.get(decile[item], (popularity[item], None))
        ranges[decile[item]] = (low, popularity[item])
    lines = {}
    for label, per_item in outcomes.items():
        line = []
        for d in sorted(ranges):
            hits = [ok for item, (_, ok) in per_item.items() if decile[item] == d]
            estimate = proportion(sum(hits), len(hits)) if hits else {"value": None, "ci_low": None, "ci_high": None}
            line.append({"decile": d + 1, "low": ranges[d][0], "high": ranges[d][1], "n": len(hits), **estimate})
        lines[label] = line
    return lines


def popularity_decile_chart(columns: dict[str, dict[str, dict[str, tuple[float, bool]]]], out_dir: Path) -> str | None:
    """Accuracy against raw popularity in deciles, one line per model with Wilson intervals.
    `columns`: column title -> model label -> item id -> (raw popularity, correct); None when no item
    carries a popularity."""
    drawn = {title: popularity_deciles(models) for title, models in columns.items() if any(models.values())}
    if not drawn:
        return None
    plt = pyplot()
    colour, (fig, axes) = _model_colours(drawn), _panels(plt, len(drawn))
    for ax, (title, lines) in zip(axes, drawn.items()):
        for label, line in lines.items():
            shown = [entry for entry in line if entry["value"] is not None]
            _line(ax, [entry["decile"] for entry in shown], shown, colour[label], label)
        ticks = next(iter(lines.values()))
        ax.set_xticks([e["decile"] for e in ticks], [f"{e['decile']}\n≤{e['high']:.3g}" for e in ticks], fontsize="x-small")
        ax.set_ylim(0, 1)
        ax.set_xlabel("popularity decile (1 = least popular; upper bound below)")
        ax.set_ylabel("accuracy (95% Wilson interval)")
        ax.set_title(title, fontsize="small")
        ax.grid(alpha=0.3)
    axes[-1].legend(fontsize="x-small", loc="best")
    fig.suptitle("Accuracy by popularity decile")
    return save_chart(fig, out_dir, "popularity_deciles.png")
