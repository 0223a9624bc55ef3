"""The comparison report of one KEE run: `write_report(results, run_dir)`.

Reads the results envelope (a v1 file is converted first, `legacy.kee`): `metrics.per_technique`
({technique: metrics}) and `metrics.per_frequency_bin` ({bin: {technique: metrics}}). Writes,
atomically, beside results.json:
- `comparison.md` and `comparison.csv`: techniques x every metric they carry (Acc, Exact, Gain,
  Loss, PRS shares with the sign test of Improved vs Worsened, SGR/DGR per temperature, the paired
  test against the baseline when present), overall and per frequency bin; proportions in percent
  with their 95% intervals, `*` for n < 30, "undefined" for an empty denominator. comparison.md
  opens with the run's protocol block ("faithful to maple-kee" or its deviations, each with what
  MAPLE does, what the run did and which numbers it touches; "not recorded" for an older file),
  then, apart, kbench's readings where MAPLE is silent (interpretations, with their alternatives);
  after the tables it says which PRS are undefined and why (a temperature-sampling method's,
  `metrics.SAMPLING_PRS_UNDEFINED`, also for a file written before kbench said so) and shows
  SGR/DGR under each reading of "recovered" side by side (`readings_section`);
  the tables give the ids of each technique's own deviations (`technique_details.*.deviations`);
  comparison.md adds the exact McNemar matrix of every pair of techniques, the head - tail and
  head - torso differences (unpaired, Newcombe) and the Kendall tau of the ranking with its
  bootstrap interval, when results.json has them;
- `prs.png`: stacked PRS proportions per technique; `gain_loss.png`: Gain and Loss per technique
  with their intervals.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from kbench.construct.protocols import results_bin_note
from kbench.errors import InputError
from kbench.io import write_text
from kbench.metrics.uncertainty import format_estimate
from kbench.protocol import describe, read_protocol
from kbench.report.explorer import FROM_DATASET, plain
from kbench.report.legacy import to_v2
from kbench.report.plots import estimate_bars, pyplot, save_chart
from kbench.report.runs import V2, is_estimate, leaves
from kbench.tasks.kee.metrics import READINGS, SAMPLING_PRS_UNDEFINED, prs_undefined
from kbench.tasks.kee.techniques import is_sampling


def _envelope(results: dict) -> dict:
    env = results if results.get("schema") == V2 else to_v2(results, Path("results.json"))
    if not isinstance(env.get("metrics", {}).get("per_technique"), dict):
        raise InputError(
            "results.json", "a KEE report needs metrics.per_technique ({technique: metrics})", key="metrics.per_technique"
        )
    return sampling_prs_undefined(env)


def sampling_prs_undefined(env: dict) -> dict:
    """The envelope with every temperature-sampling technique's PRS undefined
    (`metrics.SAMPLING_PRS_UNDEFINED`): a file written before kbench said so carries a PRS of
    100 % Tied, which no reader shows."""
    metrics = env["metrics"]
    slices = [metrics["per_technique"], *metrics.get("per_frequency_bin", {}).values()]
    if not any("prs" in m and "undefined" not in m["prs"] and is_sampling(t) for s in slices for t, m in s.items()):
        return env
    fixed = [{t: _without_prs(t, m) for t, m in s.items()} for s in slices]
    bins = dict(zip(metrics.get("per_frequency_bin", {}), fixed[1:]))
    new_metrics = {**metrics, "per_technique": fixed[0], **({"per_frequency_bin": bins} if bins else {})}
    return {**env, "metrics": new_metrics}


def _without_prs(technique: str, m: dict) -> dict:
    if "prs" not in m or "undefined" in m["prs"] or not is_sampling(technique):
        return m
    return {**m, "prs": prs_undefined(SAMPLING_PRS_UNDEFINED)}


def _text(value) -> str:
    if is_estimate(value):
        # proportions in percent; a mean (no Wilson k) stays in its own unit
        return format_estimate(value, digits=1, percent="k" in value)
    return "" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)


def comparison_tables(results: dict) -> tuple[str, str]:
    """(markdown, csv) of every slice: overall first, then each frequency bin."""
    env = _envelope(results)
    metrics = env["metrics"]
    slices = [("overall", metrics["per_technique"])] + [(f"bin: {b}", s) for b, s in metrics.get("per_frequency_bin", {}).items()]
    # the readings of "recovered" get their own section (`readings_section`), not a column each
    flat = [(name, {t: leaves(_without_readings(m)) for t, m in techniques.items()}) for name, techniques in slices]
    details = metrics.get("technique_details", {})
    deviations = {t: d.get("deviations") for t, d in details.items()}
    columns = list(dict.fromkeys(c for _, rows in flat for cells in rows.values() for c in cells))
    md = [
        f"# KEE comparison: {env['model']['name']} on {env['dataset'].get('split')} (K={env['settings'].get('k')})",
        "",
        "Percent with 95% Wilson intervals; Gain/Loss/PRS/SGR/DGR against the greedy baseline; "
        "`*` marks n < 30; 'undefined' = empty denominator.",
        "",
        *protocol_section(env),
    ]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["slice", "technique", "n", "deviates from MAPLE", *columns])
    for slice_name, rows in flat:
        md += [
            f"## {slice_name}",
            "",
            "| technique | n | deviates from MAPLE | " + " | ".join(columns) + " |",
            "|---|---:|---|" + "---|" * len(columns),
        ]
        for technique, cells in rows.items():
            n = next((v["n"] for v in cells.values() if is_estimate(v)), "")
            texts = [_text(cells.get(c)) for c in columns]
            deviates = _deviates(deviations.get(technique))
            md.append(f"| {technique} | {n} | {deviates} | " + " | ".join(texts) + " |")
            writer.writerow(
                [
                    slice_name,
                    technique,
                    n,
                    deviates,
                    *[cells[c]["value"] if is_estimate(cells.get(c)) else cells.get(c) for c in columns],
                ]
            )
        md.append("")
    md += prs_notes(metrics["per_technique"]) + readings_section(slices)
    md += comparison_sections(metrics, results_bin_note(env))
    return "\n".join(md), buffer.getvalue()


def _without_readings(m: dict) -> dict:
    rates = m.get("beyond_sampling")
    if not isinstance(rates, dict):
        return m
    return {**m, "beyond_sampling": {t: {k: v for k, v in r.items() if k != "readings"} for t, r in rates.items()}}


def prs_notes(per_technique: dict) -> list[str]:
    """One line per reason a technique's PRS is undefined, naming the techniques."""
    reasons: dict[str, list[str]] = {}
    for t, m in per_technique.items():
        if isinstance(m.get("prs"), dict) and m["prs"].get("undefined"):
            reasons.setdefault(m["prs"]["undefined"], []).append(t)
    return [f"PRS undefined for {', '.join(ts)}: {reason}." for reason, ts in reasons.items()] + ([""] if reasons else [])


def readings_section(slices: list[tuple[str, dict]]) -> list[str]:
    """SGR / DGR of each technique that kept seed-B samples under each reading of "recovered",
    side by side (MAPLE does not say which reading it uses)."""
    rows = [
        (name, t, temp, rates["readings"])
        for name, techniques in slices
        for t, m in techniques.items()
        for temp, rates in (m.get("beyond_sampling") or {}).items()
        if isinstance(rates, dict) and "readings" in rates
    ]
    if not rows:
        return []
    md = [
        '## SGR / DGR under each reading of "recovered"',
        "",
        "MAPLE draws K new seed-B samples for a temperature method but does not say when they recover an item "
        "(an interpretation, `sgr-recovery-rule`): any-of-k = one of the first K is correct (the tables above), "
        "majority-of-k = more than half of them, one-sample = the first sample.",
        "",
        "| slice | technique | τ | " + " | ".join(f"{rate} {r}" for rate in ("SGR", "DGR") for r in READINGS) + " |",
        "|---|---|---|" + "---|" * (2 * len(READINGS)),
    ]
    for name, t, temp, readings in rows:
        cells = [_text(readings.get(r, {}).get(rate)) for rate in ("sgr", "dgr") for r in READINGS]
        md.append(f"| {name} | {t} | {temp} | " + " | ".join(cells) + " |")
    return md + [""]


def protocol_section(env: dict) -> list[str]:
    """The run's protocol block as markdown: one line when faithful or not recorded, else a list."""
    protocol = read_protocol(env, "results.json")
    lines = [f"**Protocol: {describe(protocol)}**" + (f" ({protocol.reference})" if protocol else ""), ""]
    for d in protocol.deviations if protocol else ():
        lines.append(f"- `{d.id}`: {d.kbench}. MAPLE: {d.paper}. Touches: {d.effect}.")
    lines += [""] if protocol and protocol.deviations else []
    if protocol and protocol.interpretations:
        lines += ["**Interpretations** (MAPLE is silent; kbench's reading, not MAPLE's):", ""]
        for i in protocol.interpretations:
            others = "; ".join(i.alternatives)
            lines.append(f"- `{i.id}`: {i.kbench}. MAPLE: {i.paper}. Alternatives: {others}. Touches: {i.effect}.")
        lines.append("")
    return lines


def _deviates(deviations: list[str] | None) -> str:
    return "not recorded" if deviations is None else "; ".join(deviations) if deviations else "no"


def _p(value: float) -> str:
    return f"{value:.3g}"


def comparison_sections(metrics: dict, bin_note: str | None = None) -> list[str]:
    """The comparisons between techniques, between frequency bins and across K, as markdown."""
    md: list[str] = []
    tests = metrics.get("pairwise_tests")
    if tests:
        names = list(dict.fromkeys([t["first"] for t in tests] + [t["second"] for t in tests]))
        cell = {(t["first"], t["second"]): t for t in tests}
        md += [
            "## Paired tests between techniques",
            "",
            "Exact McNemar on the items both answered: cell (row, column) = b / c, b = items only the row technique gets "
            "right, c = only the column one; p two-sided, Holm-adjusted over all pairs in brackets.",
            "",
            "| | " + " | ".join(names[1:]) + " |",
            "|---|" + "---|" * (len(names) - 1),
        ]
        for row in names[:-1]:
            cells = [
                f"{t['b']} / {t['c']}, p {_p(t['p_value'])} [{_p(t['p_holm'])}]" if (t := cell.get((row, col))) else ""
                for col in names[1:]
            ]
            md.append(f"| {row} | " + " | ".join(cells) + " |")
        md.append("")
    per = metrics.get("per_technique", {})
    signs = {t: m["prs"]["sign_test"] for t, m in per.items() if "sign_test" in m.get("prs", {})}
    if signs:
        md += [
            "## PRS sign test: Improved against Worsened",
            "",
            "Exact two-sided sign test over the unflipped failures (Tied left out).",
            "",
            "| technique | Improved | Worsened | p |",
            "|---|---:|---:|---:|",
        ]
        md += [f"| {t} | {s['plus']} | {s['minus']} | {_p(s['p_value'])} |" for t, s in signs.items()]
        md.append("")
    differences = metrics.get("frequency_bin_differences")
    if differences:
        md += [
            "## Frequency bins: head - tail, head - torso",
            "",
            "Differences of proportions, unpaired (the bins hold different items), percentage points with 95% Newcombe "
            "(hybrid Wilson) intervals.",
            "",
            *([f"**Bins:** {bin_note}.", ""] if bin_note else []),
            "| contrast | technique | accuracy | gain |",
            "|---|---|---|---|",
        ]
        for contrast, by_technique in differences.items():
            for t, values in by_technique.items():
                texts = [format_estimate(values.get(m), digits=1, percent=True) for m in ("accuracy", "gain")]
                md.append(f"| {contrast} | {t} | " + " | ".join(texts) + " |")
        md.append("")
    md += _stability_section(metrics.get("ranking_stability") or {})
    return md


def _stability_section(stability: dict) -> list[str]:
    columns = [(t, rate) for t, rates in stability.items() for rate in rates]
    if not columns:
        return []
    ks = list(next(iter(stability[columns[0][0]].values())))
    first = stability[columns[0][0]][columns[0][1]][ks[0]]
    if not isinstance(first, dict):  # a results file from before the intervals: plain taus
        return []
    md = [
        "## Ranking stability: Kendall tau-b of the method ranking at each K against the reference K",
        "",
        f"95% percentile bootstrap over base failures (seed {first['seed']}, {first['resamples']} resamples).",
        "",
        "| K | " + " | ".join(f"{rate.upper()} at τ = {t}" for t, rate in columns) + " |",
        "|---:|" + "---|" * len(columns),
    ]
    for k in ks:
        md.append(f"| {k} | " + " | ".join(format_estimate(stability[t][rate][k], digits=2) for t, rate in columns) + " |")
    md.append("")
    return md


def _techniques(env: dict) -> tuple[list[str], dict[str, dict]]:
    per = {t: leaves(m) for t, m in env["metrics"]["per_technique"].items()}
    return [t for t in per if t != "baseline"], per


def prs_chart(results: dict, out_dir: Path) -> str:
    plt = pyplot()
    env = _envelope(results)
    names, per = _techniques(env)
    names = [n for n in names if "undefined" not in env["metrics"]["per_technique"][n].get("prs", {})]
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(names) + 2), 4))
    bottom = [0.0] * len(names)
    for label, colour in (("improved", "#2a9d8f"), ("tied", "#bbbbbb"), ("worsened", "#e76f51")):
        heights = [per[n].get(f"prs {label}", {}).get("value") or 0.0 for n in names]
        ax.bar(range(len(names)), heights, 0.6, bottom=bottom, label=label, color=colour)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of unrecovered failures")
    ax.set_title("PRS: gold first-token rank vs baseline (0→0 items)")
    ax.legend(fontsize="small")
    return save_chart(fig, out_dir, "prs.png")


def gain_loss_chart(results: dict, out_dir: Path) -> str:
    plt = pyplot()
    names, per = _techniques(_envelope(results))
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(names) + 2), 4))
    for offset, (metric, colour) in zip((-0.2, 0.2), (("gain", "#2a9d8f"), ("loss", "#e76f51"))):
        # an undefined ratio is drawn as no bar and named in the table
        estimate_bars(
            ax,
            [i + offset for i in range(len(names))],
            [per[n].get(metric) for n in names],
            0.4,
            metric.capitalize(),
            horizontal=False,
            colour=colour,
        )
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_title("Gain (base failures fixed) and Loss (base successes broken), 95% intervals")
    ax.legend(fontsize="small")
    return save_chart(fig, out_dir, "gain_loss.png")


def write_report(results: dict, out_dir: Path) -> list[str]:
    markdown, table = comparison_tables(results)
    write_text(out_dir / "comparison.md", markdown)
    write_text(out_dir / "comparison.csv", table)
    return ["comparison.md", "comparison.csv", prs_chart(results, out_dir), gain_loss_chart(results, out_dir)]


def explorer_table(rows: list[dict], dataset: dict[str, dict]) -> dict:
    """One row per item; each technique's (answer, correct, gold rank), each sampling partition's
    share of correct samples."""
    techniques = list(dict.fromkeys(r["technique"] for r in rows if r.get("correct") is not None))
    partitions = list(dict.fromkeys(r["technique"] for r in rows if r.get("sample_correct") is not None))
    items: dict[str, dict] = {}
    for r in rows:
        item = items.setdefault(str(r["item_id"]), {"id": r["item_id"], **{k: r.get(k) for k in ("relation", "frequency_bin")}})
        for key in FROM_DATASET:
            if item.get(key) is None and (r.get(key) is not None or key in dataset.get(str(r["item_id"]), {})):
                item[key] = r.get(key) if r.get(key) is not None else dataset[str(r["item_id"])][key]
        if r["technique"] in techniques:
            item[r["technique"]] = [r.get("answer") or r.get("prediction"), bool(r["correct"]), r.get("gold_rank")]
        elif r["technique"] in partitions:
            flags = r["sample_correct"] or []
            item[r["technique"]] = f"{sum(bool(f) for f in flags)}/{len(flags)} correct"
    base = [
        c
        for c in ("id", "relation", "subject", "question", "answers", "object", "frequency_bin")
        if any(c in i for i in items.values())
    ]
    columns = (
        [{"key": c, "kind": "text"} for c in base]
        + [{"key": t, "kind": "answer"} for t in techniques]
        + [{"key": p, "kind": "text"} for p in partitions]
    )
    data = [[plain(i.get(c["key"])) for c in columns] for i in items.values()]
    return {"columns": columns, "rows": data, "techniques": techniques}
