"""XTEVAL report: a markdown table of the gap figures and the paper-style stacked bar chart.

The chart has one bar per setting (IID, OOD), stacked bottom to top: usable knowledge
(acc_D x downstream), Gap 2 (acquired but not used), Gap 1 (not acquired); the three add to 1.
`kbench report` draws the same split for all its XTEVAL runs together (`runs_gap_chart`).
"""

from __future__ import annotations

from pathlib import Path

from kbench.io import atomic_path, write_text
from kbench.metrics.uncertainty import format_estimate
from kbench.protocol import describe, read_protocol
from kbench.report.plots import pyplot, save_chart
from kbench.report.runs import Run, is_estimate, metric_tables

_RUNS_GAP_COLOURS = {"usable_knowledge": "#2a9d8f", "gap2": "#e9c46a", "gap1": "#e76f51"}
_RUNS_GAP_NAMES = {
    "usable_knowledge": "usable (acc_D × downstream)",
    "gap2": "gap 2: known, not used",
    "gap1": "gap 1: not known (1 − acc_D)",
}
FIGURES = ("acc_D", "downstream_accuracy", "chance_accuracy", "usable_knowledge", "gap1", "gap2")


def markdown_table(results: dict) -> str:
    """From a results.v2 envelope."""
    head = "| setting | runs | " + " | ".join(FIGURES) + " |"
    metrics = results["metrics"]
    extraction = metrics["extraction"]
    probed = ", ".join(f"seed {s['seed']}: {s['n_known']} of {s['n_probed']}" for s in extraction["seeds"])
    lines = [
        f"# XTEVAL: {results['model']['name']}",
        "",
        f"Dataset `{results['dataset']['path']}` ({results['dataset']['split']}, {metrics['n_facts']} facts). "
        f"Known facts (D^theta): {extraction['criterion']}; {probed}.",
        "",
        "Mean ± sample std: acc_D and gap1 over the extraction seeds, the other figures over the runs "
        "(extraction x split x fine-tune), as in the paper. chance_accuracy is a random ranking's "
        "(mean 1 / candidates).",
        "",
        head,
        "|" + "---|" * (len(FIGURES) + 2),
    ]
    for setting, agg in metrics["settings"].items():
        cells = [f"{agg[k]['mean']:.3f} ± {agg[k]['std']:.3f}" for k in FIGURES]
        lines.append(f"| {setting} | {len(agg['runs'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines + headline_lines(results) + protocol_lines(results)) + "\n"


def protocol_lines(results: dict) -> list[str]:
    """The run's protocol block: "faithful to xteval", or its deviations one per line; then the
    interpretations (the paper is silent), apart."""
    protocol = read_protocol(results, "results.json")
    lines = ["", f"Protocol: {describe(protocol)}" + (f" ({protocol.reference})" if protocol else "") + "."]
    if protocol is not None:
        lines += [f"- `{d.id}`: paper: {d.paper}; this run: {d.kbench}; touches: {d.effect}." for d in protocol.deviations]
        if protocol.interpretations:
            lines += ["", "Interpretations (the paper is silent; kbench's reading, not the paper's):"]
            lines += [
                f"- `{i.id}`: paper: {i.paper}; this run: {i.kbench}; alternatives: {'; '.join(i.alternatives)}; "
                f"touches: {i.effect}."
                for i in protocol.interpretations
            ]
    return lines


def headline_lines(results: dict) -> list[str]:
    """The headline Estimates with their 95% intervals, IID - OOD beside the figures it compares."""
    lines = ["", "Headline, 95% intervals (" + results["metrics"]["statistics"]["headline"] + "):", ""]
    lines += ["| figure | value [95% CI] | n | the interval covers |", "|---|---|---:|---|"]
    lines += [f"| {name} | {format_estimate(e)} | {e['n']} | {e.get('covers', '')} |" for name, e in results["headline"].items()]
    difference = results["metrics"].get("iid_minus_ood")
    if difference:
        shared = difference["on_shared_facts"]
        lines += [
            "",
            f"IID - OOD: {difference['pairing']}. On the {shared['n_shared']} facts in both an IID and an OOD test "
            f"split, paired: difference {format_estimate(shared['difference'])}, b = {shared['b']}, c = {shared['c']}, "
            f"p = {shared['p_value']:.3g} ({shared['test']}).",
        ]
    return lines


def gap_chart(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per_setting = results["metrics"]["settings"]
    settings = list(per_setting)
    layers = [
        ("usable_knowledge", "usable knowledge", "#4c72b0"),
        ("gap2", "Gap 2 (not utilised)", "#dd8452"),
        ("gap1", "Gap 1 (not acquired)", "#c7c7c7"),
    ]
    fig, ax = plt.subplots(figsize=(3.4 + 1.0 * len(settings), 3.6))
    bottom = [0.0] * len(settings)
    for key, label, colour in layers:
        values = [per_setting[s][key]["mean"] for s in settings]
        errors = [per_setting[s][key]["std"] for s in settings]
        ax.bar([s.upper() for s in settings], values, bottom=bottom, color=colour, label=label, yerr=errors, capsize=3)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fraction of facts")
    ax.set_title(results["model"]["name"], fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def write_report(out: Path, results: dict) -> None:
    write_text(Path(out) / "report.md", markdown_table(results))
    gap_chart(results, Path(out) / "gaps.png")


def runs_gap_chart(runs: list[Run], out_dir: Path) -> str | None:
    """The report's chart over every XTEVAL run: each run's facts per setting split into usable
    knowledge, gap 2 and gap 1 (they sum to 1); None when no run has the three figures."""
    rows = []
    for run in runs:
        for _, _, table in metric_tables(run.metrics):  # XTEVAL v1: per_setting (iid, ood)
            for setting, cells in table.items():
                if all(is_estimate(cells.get(k)) and cells[k]["value"] is not None for k in _RUNS_GAP_COLOURS):
                    rows.append((f"{run.label} · {setting}", {k: cells[k]["value"] for k in _RUNS_GAP_COLOURS}))
    if not rows:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, max(2.2, 0.6 * len(rows) + 1.2)))
    for row, (_, gaps) in enumerate(rows):
        left = 0.0
        for key in ("usable_knowledge", "gap2", "gap1"):
            ax.barh(row, gaps[key], left=left, color=_RUNS_GAP_COLOURS[key], label=_RUNS_GAP_NAMES[key] if row == 0 else None)
            if gaps[key] >= 0.06:
                ax.text(left + gaps[key] / 2, row, f"{gaps[key]:.2f}", ha="center", va="center", fontsize="small")
            left += gaps[key]
    ax.set_yticks(range(len(rows)), [name for name, _ in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of facts (means over seeds)")
    ax.set_title("Acquisition-utilization gaps (XTEVAL)")
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
    return save_chart(fig, out_dir, "gaps.png")
