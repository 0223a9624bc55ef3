"""`kbench report SUITE_DIR --out DIR`: the page of a suite folder (found by its suite.json).

One self-contained index.html in the style of the run report (its CSS and cell formatting), with:
- the model table (parameters counted from the weights, family, dtype, chat template, context
  length, sha256 or revision, training tokens and release date from `[models.meta]`);
- the leaderboard: models x (task, dataset), each cell's primary headline with its 95% interval
  and n; failed and pending cells shown as such; sortable by clicking a column (a few lines of JS);
- the protocol of every cell (`kbench.protocol.describe`: faithful, or its deviations);
- paired comparisons per (task, dataset): exact McNemar for every pair of models on the items
  both have, Holm across the pairs, the number of shared items; a warning naming the difference
  when the cells' protocol blocks differ (`kbench.protocol.comparison_differences`);
- the scaling and popularity charts (`kbench.suite.charts`); `pairs.md` holds the paired tests.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from kbench.io import write_text
from kbench.metrics.uncertainty import format_estimate, pairwise_mcnemar
from kbench.protocol import comparison_differences, describe, read_protocol
from kbench.report.compare import correctness
from kbench.report.items import item_correct, read_items
from kbench.report.page import _CSS, SMALL_LEGEND, fmt
from kbench.report.runs import Run, load_run
from kbench.suite import charts
from kbench.suite.status import read_suite_json

_SORT_JS = """
document.querySelectorAll('table.sortable th').forEach(th => th.addEventListener('click', () => {
  const body = th.closest('table').tBodies[0], up = th.dataset.dir !== 'asc', col = th.cellIndex;
  th.dataset.dir = up ? 'asc' : 'desc';
  const key = r => { const c = r.cells[col]; const v = c.dataset.sort ?? c.textContent; return isNaN(+v) ? v : +v; };
  [...body.rows].sort((a, b) => (key(a) > key(b) ? 1 : key(a) < key(b) ? -1 : 0) * (up ? 1 : -1))
    .forEach(r => body.appendChild(r));
}));
"""
# The model table and the leaderboard wrap inside the page instead of scrolling sideways (a suite of 12 columns
# is wider than 1,300 px on one line a cell); words stay whole, an error message breaks anywhere.
_EXTRA_CSS = (
    "table.sortable th { cursor: pointer; } td.failed { background: #fde8e8; color: #a11; }"
    " table.sortable th, table.sortable td { white-space: normal; overflow-wrap: break-word; }"
    " #leaderboard th:not(:first-child) { overflow-wrap: anywhere; }"
    " td.error { text-align: left; min-width: 12rem; overflow-wrap: anywhere; }"
)


def build_suite_report(folder: Path, out_dir: Path) -> Path:
    document = read_suite_json(folder)
    cells = document["cells"]
    columns: dict[str, dict[str, Run]] = {}  # "task / dataset" -> model label -> finished run
    for cell in cells.values():
        if cell["status"] == "done":
            columns.setdefault(_column(cell), {})[cell["model"]] = load_run(folder / cell["run_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    comparisons = [_pairs(title, runs) for title, runs in columns.items() if len(runs) > 1]
    write_text(out_dir / "pairs.md", _pairs_markdown(comparisons))
    images = {
        "scaling": charts.scaling_chart(columns, document.get("models", {}), out_dir),
        "popularity": charts.popularity_chart(columns, out_dir),
        "popularity decile": charts.popularity_decile_chart(
            {title: {label: _popularity(run) for label, run in runs.items()} for title, runs in columns.items()}, out_dir
        ),
    }
    name = document["suite"]["suite"]["name"]
    parts = [
        f"<h1>kbench suite {escape(name)}</h1>",
        f"<p class='meta'>{len(cells)} cells: "
        + ", ".join(f"{n} {s}" for s, n in sorted(_counts(cells).items()))
        + f"; folder {escape(str(folder))}</p>",
        *_models(document),
        *_leaderboard(document, columns),
        *_protocols(cells, columns),
        *_comparisons(comparisons),
        "<h2>Charts</h2>",
        *(f'<img src="{escape(png)}" alt="{escape(kind)} chart">' for kind, png in images.items() if png),
    ]
    index = out_dir / "index.html"
    write_text(
        index,
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>kbench suite {escape(name)}</title>"
        f"<style>{_CSS}{_EXTRA_CSS}</style></head><body>\n" + "\n".join(parts) + f"\n<script>{_SORT_JS}</script></body></html>\n",
    )
    return index


def _column(cell: dict) -> str:
    return f"{cell['task']} / {cell['dataset']}"


def _counts(cells: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for cell in cells.values():
        counts[cell["status"]] = counts.get(cell["status"], 0) + 1
    return counts


def _models(document: dict) -> list[str]:
    keys = (
        "parameters",
        "family",
        "dtype",
        "chat_template",
        "instruction_tuned",
        "context_length",
        "training_tokens",
        "release_date",
    )
    rows = []
    for label, row in document.get("models", {}).items():
        cells = "".join(f"<td>{escape(fmt(row.get(k)))}</td>" for k in keys)
        if row.get("error"):  # the model did not open: why, in full
            weights = f"<td class='failed error'>could not open: {escape(row['error'])}</td>"
        else:
            weights = row.get("sha256") or row.get("revision") or ""
            weights = f"<td title='{escape(weights)}'>{escape(weights[:16])}</td>"
        rows.append(f"<tr><td>{escape(label)}</td>{cells}{weights}</tr>")
    head = "".join(f"<th>{escape(k.replace('_', ' '))}</th>" for k in ("model", *keys, "sha256 / revision"))
    return [
        "<h2>Models</h2>",
        f"<div class='scroll'><table class='sortable'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>",
    ]


def _leaderboard(document: dict, columns: dict[str, dict[str, Run]]) -> list[str]:
    cells = list(document["cells"].values())
    titles = list(dict.fromkeys(_column(c) for c in cells))
    models = list(dict.fromkeys(c["model"] for c in cells))
    by_key = {(c["model"], _column(c)): c for c in cells}
    head = "<th>model</th>" + "".join(
        f"<th>{escape(t)}<br><span class='ci'>{escape(_primary(columns.get(t)) or '')}</span></th>" for t in titles
    )
    rows = []
    for model in models:
        tds = []
        for title in titles:
            cell = by_key.get((model, title))
            run = (columns.get(title) or {}).get(model)
            if run is not None:
                metric = _primary(columns[title])
                estimate = run.headline.get(metric) if metric else None
                value = estimate.get("value") if estimate else None
                tds.append(
                    f"<td data-sort='{'' if value is None else value}'>{escape(format_estimate(estimate))} "
                    f"<span class='ci'>n={estimate.get('n') if estimate else '—'}</span></td>"
                )
            elif cell is not None and cell["status"] == "failed":
                tds.append(f"<td class='failed' data-sort='-1' title='{escape(cell['error'] or '')}'>failed</td>")
            else:
                tds.append(f"<td data-sort='-1'>{escape(cell['status'] if cell else '—')}</td>")
        rows.append(f"<tr><td>{escape(model)}</td>{''.join(tds)}</tr>")
    hint = "<p class='meta'>Click a column to sort; a failed cell's error is its tooltip.</p>"
    return [
        "<h2>Leaderboard</h2>",
        SMALL_LEGEND,
        hint,
        f"<div class='scroll'><table class='sortable' id='leaderboard'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>",
    ]


def _primary(runs: dict[str, Run] | None) -> str | None:
    """The column's metric: the primary metric of its first finished run (all share the task)."""
    return next(iter(runs.values())).primary if runs else None


def _protocols(cells: dict, columns: dict[str, dict[str, Run]]) -> list[str]:
    rows = []
    for cell in cells.values():
        run = (columns.get(_column(cell)) or {}).get(cell["model"])
        if run is None:
            continue
        protocol = read_protocol(run.results, str(run.path / "results.json"))
        ids = ", ".join(d.id for d in protocol.deviations) if protocol else ""
        readings = ", ".join(i.id for i in protocol.interpretations) if protocol else ""
        rows.append(
            f"<tr><td>{escape(cell['model'])}</td><td>{escape(_column(cell))}</td>"
            f"<td>{escape(describe(protocol))}</td><td>{escape(ids)}</td><td>{escape(readings)}</td></tr>"
        )
    return [
        "<h2>Protocol of every cell</h2>",
        "<table><thead><tr><th>model</th><th>task / dataset</th><th>protocol</th>"
        "<th>deviations</th><th>interpretations (the paper is silent)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>",
    ]


def _popularity(run: Run) -> dict[str, tuple[float, bool]]:
    """Item id -> (raw popularity, correct) of the run's items that carry a `frequency` (the
    frequency_bin stage's raw value); KEE's rows are the baseline technique's, as in the paired tests."""
    rows = read_items(run.path)
    techniques = {str(row.get("technique") or "") for row in rows}
    technique = "baseline" if "baseline" in techniques else min(techniques, default="")
    out = {}
    for row in rows:
        ok, key, value = item_correct(row, run.outcome_columns), row.get("item_id") or row.get("id"), row.get("frequency")
        if str(row.get("technique") or "") == technique and ok is not None and key is not None and value is not None:
            out[str(key)] = (float(value), ok)
    return out


def _pairs(title: str, runs: dict[str, Run]) -> dict:
    """Every pair of models of one column on the items both have: exact McNemar, Holm across pairs."""
    outcomes = {}
    for label, run in runs.items():
        groups = correctness(read_items(run.path), run.outcome_columns)
        group = "baseline" if "baseline" in groups else next(iter(sorted(groups)), None)  # KEE: the baseline technique
        outcomes[label] = groups.get(group, {}) if group is not None else {}
    protocols = {label: read_protocol(run.results, str(run.path / "results.json")) for label, run in runs.items()}
    return {"title": title, "tests": pairwise_mcnemar(outcomes), "warnings": comparison_differences(protocols)}


def _comparisons(comparisons: list[dict]) -> list[str]:
    parts = [
        "<h2>Paired comparisons on shared items</h2>",
        "<p class='meta'>For each task and dataset, every pair of models on the items both have (by item id): "
        "b = right only under the first, c = right only under the second; p = exact McNemar; "
        "p Holm = Holm's adjustment across the pairs of the column. Also in <a href='pairs.md'>pairs.md</a>.</p>",
    ]
    if not comparisons:
        parts.append("<p class='meta'>No task and dataset has two finished models.</p>")
    for comparison in comparisons:
        parts.append(f"<h3>{escape(comparison['title'])}</h3>")
        parts += [f"<p class='warn'>protocol: {escape(w)}</p>" for w in comparison["warnings"]]
        rows = "".join(
            f"<tr><td>{escape(t['first'])}</td><td>{escape(t['second'])}</td><td>{t['n_shared']}</td><td>{t['b']}</td>"
            f"<td>{t['c']}</td><td>{t['p_value']:.3g}</td><td>{t['p_holm']:.3g}</td></tr>"
            for t in comparison["tests"]
        )
        parts.append(
            "<table class='pairs'><thead><tr><th>first</th><th>second</th><th>shared items</th><th>b</th><th>c</th>"
            f"<th>p</th><th>p Holm</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return parts


def _pairs_markdown(comparisons: list[dict]) -> str:
    lines = [
        "# Paired comparisons on shared items",
        "",
        "Exact McNemar per pair of models on the items both have; Holm across the pairs of each task and dataset.",
        "",
    ]
    for comparison in comparisons:
        lines += [f"## {comparison['title']}", ""]
        lines += [f"> protocol: {w}\n" for w in comparison["warnings"]]
        lines += ["| first | second | shared items | b | c | p | p Holm |", "|---|---|---:|---:|---:|---:|---:|"]
        lines += [
            f"| {t['first']} | {t['second']} | {t['n_shared']} | {t['b']} | {t['c']} | {t['p_value']:.3g} | {t['p_holm']:.3g} |"
            for t in comparison["tests"]
        ]
        lines.append("")
    return "\n".join(lines)
