"""The comparison report of one KEE run: `write_report(results, run_dir)`.

Writes, atomically, beside results.json:
- `comparison.md` and `comparison.csv`: techniques × (Acc, Exact, Gain, Loss, PRS
  improved/tied/worsened, SGR/DGR per temperature, McNemar b / c / p against the baseline),
  overall and per frequency bin, in percent with 95% Wilson intervals; an undefined ratio (empty
  denominator) reads "undefined"; * marks a cell over fewer than 30 items;
- `prs.png`: stacked PRS proportions per technique; `gain_loss.png`: Gain and Loss per technique
  with 95% error bars.

Reads a results.v2 envelope (`docs/results-envelope.md`).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from kbench.io import write_text
from kbench.metrics.uncertainty import format_estimate
from kbench.report.plots import _pyplot, _save


def _columns(results: dict) -> list[str]:
    temps = [str(t) for t in results["settings"]["temperatures"]]
    return (["technique", "n", "Acc", "Exact", "Gain", "Loss", "PRS improved", "PRS tied", "PRS worsened", "PRS n"]
            + [f"{rate} τ={t}" for t in temps for rate in ("SGR", "DGR")] + ["McNemar b", "McNemar c", "p"])


def _pct(estimate: dict) -> str:
    return format_estimate(estimate, digits=1, percent=True)


def _row(name: str, m: dict, temps: list[str]) -> list[str]:
    cells = [name, str(m["accuracy"]["n"]), _pct(m["accuracy"]), _pct(m["exact_accuracy"]), _pct(m["gain"]),
             _pct(m["loss"]), _pct(m["prs"]["improved"]), _pct(m["prs"]["tied"]), _pct(m["prs"]["worsened"]),
             str(m["prs"]["n"])]
    for t in temps:
        rates = m["beyond_sampling"][t]
        cells += [_pct(rates["sgr"]), _pct(rates["dgr"])]
    paired = m["vs_baseline"]
    return cells + ([str(paired["b"]), str(paired["c"]), f"{paired['p_value']:.3g}"] if name != "baseline" else ["", "", ""])


def comparison_tables(results: dict) -> tuple[str, str]:
    """(markdown, csv) of every slice: overall first, then each frequency bin."""
    metrics = results["metrics"]
    temps = [str(t) for t in results["settings"]["temperatures"]]
    columns = _columns(results)
    slices = [("overall", metrics["overall"])] + [(f"bin: {b}", s) for b, s in metrics["per_frequency_bin"].items()]
    md = [f"# KEE comparison: {results['model']['name']} on {results['dataset']['split']} "
          f"({results['items']['count'] // max(1, len(metrics['techniques']) + len(temps))} items, K={results['settings']['k']})", "",
          "Percentages with 95% Wilson intervals; Gain/Loss/PRS/SGR/DGR against the greedy baseline on the same items; "
          "McNemar: b = right only with the technique, c = right only with the baseline, exact two-sided p; "
          "'undefined' = empty denominator; * = fewer than 30 items.", ""]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["slice", *columns])
    for slice_name, summary in slices:
        md += [f"## {slice_name}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for name in metrics["techniques"]:
            cells = _row(name, summary[name], temps)
            md.append("| " + " | ".join(cells) + " |")
            writer.writerow([slice_name, *cells])
        md.append("")
    return "\n".join(md), buffer.getvalue()


def prs_chart(results: dict, out_dir: Path) -> str:
    plt = _pyplot()
    overall = results["metrics"]["overall"]
    names = [n for n in results["metrics"]["techniques"] if n != "baseline"]
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(names) + 2), 4))
    bottom = [0.0] * len(names)
    for label, colour in (("improved", "#2a9d8f"), ("tied", "#bbbbbb"), ("worsened", "#e76f51")):
        heights = [overall[n]["prs"][label]["value"] or 0.0 for n in names]
        ax.bar(range(len(names)), heights, 0.6, bottom=bottom, label=label, color=colour)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of unrecovered failures")
    ax.set_title("PRS: gold first-token rank vs baseline (0→0 items)")
    ax.legend(fontsize="small")
    return _save(fig, out_dir, "prs.png")


def gain_loss_chart(results: dict, out_dir: Path) -> str:
    plt = _pyplot()
    overall = results["metrics"]["overall"]
    names = [n for n in results["metrics"]["techniques"] if n != "baseline"]
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(names) + 2), 4))
    for offset, (metric, colour) in zip((-0.2, 0.2), (("gain", "#2a9d8f"), ("loss", "#e76f51"))):
        estimates = [overall[n][metric] for n in names]
        heights = [e["value"] or 0.0 for e in estimates]  # undefined drawn as 0, named in the table
        errors = [[h - (e["ci_low"] if e["ci_low"] is not None else h) for h, e in zip(heights, estimates)],
                  [(e["ci_high"] if e["ci_high"] is not None else h) - h for h, e in zip(heights, estimates)]]
        ax.bar([i + offset for i in range(len(names))], heights, 0.4, yerr=errors, capsize=3,
               label=metric.capitalize(), color=colour)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_title("Gain (base failures fixed) and Loss (base successes broken), 95% CI")
    ax.legend(fontsize="small")
    return _save(fig, out_dir, "gain_loss.png")


def write_report(results: dict, out_dir: Path) -> list[str]:
    markdown, table = comparison_tables(results)
    write_text(out_dir / "comparison.md", markdown)
    write_text(out_dir / "comparison.csv", table)
    return ["comparison.md", "comparison.csv", prs_chart(results, out_dir), gain_loss_chart(results, out_dir)]
