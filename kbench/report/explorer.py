"""The item explorer: one self-contained HTML page per run listing every item the model saw.

`write_explorer(run, items, dataset, out_dir)` writes `explorer-<n>.html` with the rows inline (a
JSON block) and the page's script and style inline (`explorer.js`, `explorer.css` beside this
module): no server, no network, opens from file://. The script filters (search, relation, frequency
bin, correct/incorrect, KEE technique), pages 50 rows at a time, and keeps the filters in the URL
hash (`#relation=P19&correct=no`), so a view can be linked and a headless browser can load one.

Columns: the known ones in reading order (relation with its label, subject, question or prompt,
prediction, gold and aliases, correct, rank, frequency bin), then every other column of the items
table generically, so a new task shows up without changes here. A task whose rows are not one per
item gives its own table (`Task.explorer_table`: KEE pivots its rows per technique and item to one row
per item, each technique's answer side by side); the question, subject and gold come from the dataset
split when the rows lack them (`FROM_DATASET`).
"""

from __future__ import annotations

import json
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from kbench.io import write_text
from kbench.report.items import item_correct
from kbench.report.runs import Run, order_bins, task_class

# known columns, in the order a reader wants them; everything else follows in table order
_ORDER = (
    "id",
    "relation",
    "subject",
    "question",
    "statement",
    "prompt",
    "prediction",
    "answer",
    "answers",
    "object",
    "answer1",
    "answer2",
    "label",
    "predicted",
    "correct",
    "exact",
    "gold_rank",
    "frequency_bin",
    "category",
    "book",
)
_HIDDEN = {"relation_label", "item_id", "technique", "sample_correct"}  # shown through other columns
FROM_DATASET = ("subject", "question", "answers", "object")  # joined into KEE rows by item id


def plain(value: Any) -> Any:
    """JSON-friendly cell values (parquet lists come back as lists; floats are shortened)."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    return str(value)


def _columns(rows: list[dict]) -> list[str]:
    present = list(dict.fromkeys(k for r in rows[:1000] for k in r))
    return [c for c in _ORDER if c in present] + [c for c in present if c not in _ORDER and c not in _HIDDEN]


def _flat_table(rows: list[dict], outcome: tuple[str, ...]) -> dict:
    columns = _columns(rows)
    if "correct" not in columns and any(item_correct(r, outcome) is not None for r in rows):
        columns.append("correct")  # QA: the EM that counts, so the correct/incorrect filter works
    data = [[plain(item_correct(r, outcome) if c == "correct" else r.get(c)) for c in columns] for r in rows]
    return {
        "columns": [{"key": c, "kind": "bool" if c in ("correct", "exact") else "text"} for c in columns],
        "rows": data,
        "techniques": [],
    }


def explorer_data(run: Run, items: list[dict], dataset: dict[str, dict]) -> dict:
    task = task_class(run.task)
    table = (task().explorer_table(items, dataset) if task is not None else None) or _flat_table(items, run.outcome_columns)
    keys = [c["key"] for c in table["columns"]]
    bins = (
        order_bins({r[keys.index("frequency_bin")] for r in table["rows"] if r[keys.index("frequency_bin")]})
        if "frequency_bin" in keys
        else []
    )
    return {
        **table,
        "title": f"{run.label}: {run.task}",
        "task": run.task,
        "relations": run.relation_labels,
        "labels_source": run.labels_source,
        "bins": bins,
    }


def _asset(name: str) -> str:
    return resources.files("kbench.report").joinpath(name).read_text(encoding="utf-8")


def render_explorer(data: dict, back_link: str = "index.html") -> str:
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    title = escape(data["title"])
    return (
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>Items · {title}</title>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{_asset('explorer.css')}</style>"
        f"</head><body>\n<p class='meta'><a href='{escape(back_link)}'>← report</a></p><h1>Items · {title}</h1>"
        f"<p class='meta'>Relation labels from {escape(data['labels_source'])}.</p>"
        "<div id='controls'></div><p id='status' data-total='0' data-shown='0' data-page-rows='0'></p>"
        "<div class='scroll'><table id='items'><thead></thead><tbody></tbody></table></div><div id='pager'></div>"
        f"<script type='application/json' id='kb-data'>{payload}</script>"
        f"<script>{_asset('explorer.js')}</script></body></html>\n"
    )


def write_explorer(run: Run, items: list[dict], dataset: dict[str, dict], out_dir: Path, name: str) -> str:
    write_text(out_dir / name, render_explorer(explorer_data(run, items, dataset)))
    return name
