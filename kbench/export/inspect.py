"""`kbench export inspect`: a dataset split as an Inspect (`inspect_ai`) task file.

    FILE.py     the task: dataset, solver, scorer; needs no kbench
    FILE.jsonl  its documents (`items.export_docs`), read from beside FILE.py

The task's own `export.py` (`items.TaskExport.inspect_source`) writes the task file: how Inspect
prompts, generates and scores as kbench does. A task whose judgement Inspect cannot express says why
(`inspect_refusal`), and the export stops before any document is built.
"""

from __future__ import annotations

import re
from pathlib import Path

from kbench.errors import UserError
from kbench.export.items import ExportDocs, dataset_task, exporter
from kbench.io import write_jsonl, write_text


def check_exportable(dataset: Path, config: str | None) -> None:
    """Refuse a dataset whose task Inspect cannot judge, before its documents are built."""
    if dataset.is_dir():
        refusal = exporter(dataset_task(dataset, config)).inspect_refusal
        if refusal:
            raise UserError(f"{dataset}: {refusal}")


def write_inspect_task(docs: ExportDocs, out: Path, *, case_sensitive: bool = False) -> Path:
    """Write FILE.py and FILE.jsonl (atomically, the task file last); return the task file."""
    if out.suffix != ".py":
        raise UserError(f"--out {out}: give a .py file (Inspect runs `inspect eval FILE.py`)")
    name = out.stem
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise UserError(
            f"--out {out}: the file name is the task's name, so it must be a Python identifier (letters, digits, '_')"
        )
    task = exporter(docs.task)
    if task.inspect_refusal:
        raise UserError(task.inspect_refusal)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = out.with_suffix(".jsonl")
    write_jsonl(data, docs.docs)
    write_text(out, task.inspect_source(docs, name, data.name, case_sensitive))
    return out
