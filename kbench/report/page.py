"""The report's index.html: one self-contained page (inline CSS, no scripts, no web fonts) whose
images are relative links to the PNGs beside it, so the folder can be zipped, mailed or served
as is and read in any browser without Python."""

from __future__ import annotations

import datetime as _dt
from html import escape
from typing import Any

from kbench.report.plots import gap_rows
from kbench.report.runs import GAP_KEYS, VALUE_KEYS, RunSummary, order_bins

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1100px;
       padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
.meta { color: #666; font-size: 0.9rem; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f4f4f4; }
tbody tr:nth-child(even) { background: #fafafa; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5rem 0; }
code { background: #f4f4f4; padding: 0 0.2rem; }
"""


_ACCURACY_NOTE = ("<p class='meta'>Accuracy is the first of " + ", ".join(f"<code>{k}</code>" for k in VALUE_KEYS)
                  + " that a run reports (maple_accuracy: normalised match against the gold label and aliases).</p>")


def fmt(value: Any) -> str:
    if isinstance(value, dict) and "mean" in value:
        std = value.get("std")
        return fmt(value["mean"]) + (f" ± {fmt(std)}" if isinstance(std, (int, float)) else "")
    if value is None:  # missing for this run, or undefined (an empty denominator)
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) <= 1 else f"{value:,.2f}"
    return str(value)


def table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(fmt(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def image(name: str | None, alt: str) -> str:
    return f'<img src="{escape(name)}" alt="{escape(alt)}">' if name else ""


_TECHNIQUE_COLUMNS = ("n", "acc", "accuracy", "exact_accuracy", "exact", "gain", "loss", "prs", "sgr", "dgr")
_PRS_PARTS = ("improved", "tied", "worsened", "n")


def _technique_column_order(column: str) -> tuple[int, int, str]:
    """MAPLE's order (Acc, Gain, Loss, PRS improved/tied/worsened/n, SGR, DGR), then the rest."""
    head, _, rest = column.lower().partition(" ")
    group = _TECHNIQUE_COLUMNS.index(head) if head in _TECHNIQUE_COLUMNS else len(_TECHNIQUE_COLUMNS)
    part = _PRS_PARTS.index(rest) if head == "prs" and rest in _PRS_PARTS else 0
    return (group, part, column)


def _metric_table(labels: list[str], tables: list[dict[str, Any]], first: str, keys: list[str]) -> str:
    """Rows = keys, columns = the runs that have this table at all."""
    shown = [(label, t) for label, t in zip(labels, tables) if t]
    return table([first, *[label for label, _ in shown]], [[k, *[t.get(k) for _, t in shown]] for k in keys])


def render_page(runs: list[RunSummary], labels: list[str], charts: dict[str, str | None]) -> str:
    parts = [f"<h1>kbench report</h1><p class='meta'>{len(runs)} run(s), generated "
             f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC</p>"]
    parts.append(table(["run", "task", "folder"], [[label, run.task, str(run.path)] for label, run in zip(labels, runs)]))

    headline_keys = list(dict.fromkeys(k for run in runs for k in run.headline))
    if headline_keys:
        parts += ["<h2>Summary</h2>", _metric_table(labels, [r.headline for r in runs], "metric", headline_keys),
                  image(charts.get("models"), "model vs model")]

    relations = sorted({k for run in runs for k in run.per_relation})
    if relations:
        parts += ["<h2>Accuracy per relation</h2>", _ACCURACY_NOTE, image(charts.get("relations"), "accuracy per relation"),
                  _metric_table(labels, [r.per_relation for r in runs], "relation", relations)]

    bins = order_bins({k for run in runs for k in run.per_bin})
    if bins:
        parts += ["<h2>Accuracy per frequency bin</h2>", image(charts.get("bins"), "accuracy per frequency bin"),
                  _metric_table(labels, [r.per_bin for r in runs], "frequency bin", bins)]

    for label, run in zip(labels, runs):
        if run.techniques:
            columns = sorted(dict.fromkeys(c for t in run.techniques for c in t if c != "technique"),
                             key=_technique_column_order)
            parts += [f"<h2>Techniques: {escape(label)}</h2>",
                      table(["technique", *columns], [[t["technique"], *[t.get(c) for c in columns]] for t in run.techniques])]
        if run.technique_bins:
            bins_seen = order_bins({b for per in run.technique_bins.values() for b in per})
            parts += ["<p>Accuracy per frequency bin:</p>",
                      table(["technique", *bins_seen], [[name, *[per.get(b) for b in bins_seen]]
                                                        for name, per in run.technique_bins.items()])]

    gap_columns = gap_rows(runs, labels)
    if gap_columns:
        keys = [k for k in GAP_KEYS if any(k in run.gaps[setting] for _, run, setting in gap_columns)]
        tables = [{k: {"mean": v, "std": run.gap_std.get(setting, {}).get(k)} for k, v in run.gaps[setting].items()}
                  for _, run, setting in gap_columns]
        parts += ["<h2>Knowledge acquisition-utilization gaps</h2>", image(charts.get("gaps"), "gap chart"),
                  "<p>gap 1 = 1 − acc_D (not extracted); usable = acc_D × downstream accuracy; "
                  "gap 2 = acc_D × (1 − downstream accuracy) (extracted but not used).</p>",
                  _metric_table([name for name, _, _ in gap_columns], tables, "metric", keys)]

    body = "\n".join(p for p in parts if p)
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>kbench report</title>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_CSS}</style></head>"
            f"<body>\n{body}\n</body></html>\n")
