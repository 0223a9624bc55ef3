"""The report's index.html: one self-contained page (inline CSS, no scripts, no web fonts) whose
images and item explorers are relative links to files beside it, so the folder can be zipped,
mailed or served as is.

Every number is an Estimate shown with its 95% interval and n; a cell over fewer than 30 items is
marked `*` (and shaded). Relations read "P19 · place of birth" wherever a label is known.
Each run's section and each comparison opens with the protocol: "faithful to NAME", the list of
deviations, or "protocol not recorded" (docs/protocol.md); a comparison whose runs' protocols
differ says which differences make it not like for like.
"""

from __future__ import annotations

import datetime as _dt
from html import escape
from typing import Any

from kbench.construct.protocols import results_bin_note
from kbench.metrics.uncertainty import SMALL_N, is_small
from kbench.protocol import describe
from kbench.report.compare import Comparison, pair_cells, part_counts
from kbench.report.protocols import block_html
from kbench.report.runs import Run, is_estimate, metric_tables, order_bins, task_class

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1150px;
       padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
.meta { color: #666; font-size: 0.9rem; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.88rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f4f4f4; }
tbody tr:nth-child(even) { background: #fafafa; }
td.small { background: #fff4e5; }
table.runs td, table.runs th { white-space: normal; word-break: break-all; text-align: left; }
.ci { color: #777; font-size: 0.85em; }
.warn { background: #fff4e5; border-left: 4px solid #e9a23b; padding: 0.4rem 0.8rem; }
.ok { background: #eef8ee; border-left: 4px solid #4a9a4a; padding: 0.4rem 0.8rem; }
table.protocol td { white-space: normal; text-align: left; vertical-align: top; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5rem 0; }
code { background: #f4f4f4; padding: 0 0.2rem; }
"""

SMALL_LEGEND = (
    f"<p class='meta'>Values with 95% intervals in brackets (Wilson for proportions, bootstrap "
    f"for means); <code>*</code> and shading mark cells over fewer than {SMALL_N} items.</p>"
)


def fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) <= 1 else f"{value:,.2f}"
    return str(value)


def cell(value: Any) -> str:
    """One <td>: an Estimate with its interval (or ± std over seeds) and the small-n mark."""
    if not is_estimate(value):
        return f"<td>{escape(fmt(value))}</td>"
    if value.get("undefined"):
        return f"<td title='{escape(value['undefined'])}'>undefined ({escape(value['undefined'])})</td>"
    if value.get("value") is None:
        return "<td title='undefined: no items'>undefined</td>"
    text = escape(fmt(float(value["value"])))
    if value.get("ci_low") is not None and value.get("ci_high") is not None:
        text += f" <span class='ci'>[{fmt(float(value['ci_low']))}, {fmt(float(value['ci_high']))}]</span>"
    elif value.get("std") is not None:
        text += f" <span class='ci'>± {fmt(float(value['std']))} (sd over {value.get('runs', '?')} runs)</span>"
    small = is_small(value)
    return f"<td{' class=small' if small else ''} title='n = {value['n']}'>{text}{'*' if small else ''}</td>"


def table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(cell(v) if i else f"<td>{escape(fmt(v))}</td>" for i, v in enumerate(row)) + "</tr>" for row in rows
    )
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def image(name: str | None, alt: str) -> str:
    return f'<img src="{escape(name)}" alt="{escape(alt)}">' if name else ""


def _row_n(cells: dict[str, Any]) -> int | None:
    return next((v["n"] for v in cells.values() if is_estimate(v)), None)


def breakdown(run: Run, kind: str, rows: dict[str, dict[str, Any]], first: str) -> str:
    """Rows of one metric table with n first; relations named, bins in head-torso-tail order."""
    columns = list(dict.fromkeys(c for cells in rows.values() for c in cells))
    names = order_bins(rows) if kind == "per_frequency_bin" else list(rows)
    label = run.relation_name if kind == "per_relation" else str
    return table([first, "n", *columns], [[label(r), _row_n(rows[r]), *[rows[r].get(c) for c in columns]] for r in names])


def _summary(runs: list[Run], comparisons: list[Comparison]) -> list[str]:
    parts = ["<h2>Summary</h2>", SMALL_LEGEND]
    partial = {c.task for c in comparisons if any(c.left_out(label) for label in c.labels)}
    for task in dict.fromkeys(r.task for r in runs):
        members = [r for r in runs if r.task == task]
        keys = list(dict.fromkeys([r.primary for r in members] + [k for r in members for k in r.headline]))
        parts.append(f"<h3>{escape(task)}</h3>")
        if len(members) > 1 and (task in partial or len({_row_n(r.headline) for r in members}) > 1):
            parts.append(
                "<p class='warn'>These runs were evaluated on different items; each number here is over "
                "the run's own items. The paired comparison below uses the shared items only.</p>"
            )
        parts.append(
            table(
                ["run", "protocol", "n", *keys],
                [[r.label, describe(r.protocol), _row_n(r.headline), *[r.headline.get(k) for k in keys]] for r in members],
            )
        )
    return parts


def _comparisons(comparisons: list[Comparison], notes: list[str], chart: str | None) -> list[str]:
    if not comparisons and not notes:
        return []
    parts = [
        "<h2>Model comparison on shared items</h2>",
        "<p class='meta'>Runs of one task compared on the items they all have (by item id), paired: "
        "b = items only the first model gets right, c = only the second; p = exact McNemar test. "
        "Full numbers in <a href='comparison.md'>comparison.md</a>.</p>",
        image(chart, "models on shared items"),
    ]
    for c in comparisons:
        left = "; ".join(f"{escape(label)}: {c.left_out(label)} of {c.items[label]} left out" for label in c.labels)
        parts.append(f"<h3>{escape(c.task)}: {c.n_shared} shared {escape(c.unit)}s</h3><p class='meta'>{left}</p>")
        protocols = "; ".join(f"{escape(label)}: {escape(text)}" for label, text in c.protocols.items())
        parts.append(f"<p class='meta'>Protocols: {protocols}.</p>")
        if c.protocol_differences:
            listed = "".join(f"<li>{escape(line)}</li>" for line in c.protocol_differences)
            parts.append(f"<div class='warn'><b>Not like for like</b>: the runs' protocols differ.<ul>{listed}</ul></div>")
        for group, result in c.groups.items():
            kind = f"{escape(c.group_kind)} " if c.group_kind else ""
            title = f"<p>{kind}<code>{escape(group)}</code></p>" if group else ""
            counts = part_counts(c, result)
            accuracy = table(["model", "accuracy on shared items"], [[label, e] for label, e in result["accuracy"].items()])
            header, rows = pair_cells(result["pairs"])
            pairs = table(header, rows)
            parts += [title, f"<p class='meta'>{escape(counts)}</p>" if counts else "", accuracy, pairs]
    parts += [f"<p class='warn'>{escape(note)}</p>" for note in notes]
    return parts


def render_page(
    runs: list[Run],
    explorers: dict[str, str],
    charts: dict[str, str | None],
    task_charts: list[tuple[str, str]],
    comparisons: list[Comparison],
    notes: list[str],
) -> str:
    """The report page; `task_charts`: (file, caption) of the charts the runs' tasks drew."""
    parts = [
        f"<h1>kbench report</h1><p class='meta'>{len(runs)} run(s), generated {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC</p>"
    ]
    rows = "".join(
        f"<tr><td>{escape(r.label)}</td><td>{escape(r.task)}</td><td>{escape(str(r.path))}</td>"
        f"<td>{escape(str(r.results.get('converted_from') or r.results.get('schema')))}</td>"
        f"<td>{escape(r.labels_source)}</td><td>{escape(describe(r.protocol))}</td><td>"
        + (f"<a href='{escape(explorers[r.label])}'>items</a>" if r.label in explorers else "—")
        + "</td></tr>"
        for r in runs
    )
    parts.append(
        "<table class='runs'><thead><tr><th>run</th><th>task</th><th>folder</th><th>results schema</th>"
        f"<th>relation labels from</th><th>protocol</th><th>explorer</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    parts += _summary(runs, comparisons)
    parts += _comparisons(comparisons, notes, charts.get("models"))
    if charts.get("relations") or charts.get("bins") or task_charts:
        parts += [
            "<h2>Charts</h2>",
            image(charts.get("relations"), "per relation"),
            image(charts.get("bins"), "per frequency bin"),
            *(image(name, caption) for name, caption in task_charts),
        ]
    for run in runs:
        parts += [f"<h2>{escape(run.label)}: {escape(run.task)}</h2>", block_html(run.protocol)]
        bins_note = results_bin_note(run.results) if run.metrics.get("frequency_bin_differences") else None
        if bins_note:  # a head - tail difference says where its bins came from
            parts.append(f"<p class='warn'><b>Head − tail, head − torso:</b> {escape(bins_note)}</p>")
        tables = metric_tables(run.metrics)
        task = task_class(run.task)
        section = task().report_section(run) if task is not None else ""  # the task's own part of the page
        for title, kind, rows_ in tables:
            first = kind.removeprefix("per_").replace("_", " ")
            parts += [f"<h3>{escape(title.replace('_', ' '))}</h3>", breakdown(run, kind, rows_, first)]
        parts.append(section)
    body = "\n".join(p for p in parts if p)
    return (
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>kbench report</title>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_CSS}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )
