"""A run's per-item rows, the dataset rows behind them, and relation labels.

- `read_items(run)`: `items.parquet` (or `items.jsonl`) as dicts in file order; [] when the run has
  neither (XTEVAL v1 wrote none).
- `dataset_rows(run)`: the rows of the dataset split the run evaluated, by id, when that file is
  still where results.json says (v1: `dataset.file`; v2: `dataset.path`/data/CONFIG/SPLIT.parquet).
  KEE rows carry only ids and answers; the explorer joins question, subject and gold from here.
- `attach_relation_labels(run, rows, relations_file)`: relation id -> label, from the first source
  that has labels: the items' `relation_label` column, the dataset split's, or a relations JSONL
  file (`--relations`, e.g. LAMA's relations.jsonl: {"relation": "P19", "label": "place of birth"}).
  A label equal to its id (hand-made datasets) counts as none. `run.labels_source` says which.
- `item_correct(row, columns)`: the 0/1 outcome a paired comparison uses: the first non-null of the
  run task's `outcome_columns` (QA: `em`, or `em_updated` for edited facts).
"""

from __future__ import annotations

import json
from pathlib import Path

from kbench.errors import InputError
from kbench.report.runs import Run


def read_items(run_dir: Path) -> list[dict]:
    import polars as pl

    parquet, jsonl = run_dir / "items.parquet", run_dir / "items.jsonl"
    if parquet.is_file():
        return pl.read_parquet(parquet).to_dicts()
    if jsonl.is_file():
        rows = []
        for number, line in enumerate(jsonl.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(jsonl, f"not JSON ({exc.msg})", line=number) from exc
        return rows
    return []


def _dataset_file(run: Run) -> Path | None:
    dataset = run.results.get("dataset") or {}
    if dataset.get("file"):
        return Path(dataset["file"])
    if dataset.get("path") and dataset.get("split"):
        return Path(dataset["path"]) / "data" / (dataset.get("config") or "default") / f"{dataset['split']}.parquet"
    return None


def dataset_rows(run: Run) -> dict[str, dict]:
    import polars as pl

    path = _dataset_file(run)
    if path is None or not path.is_file() or path.suffix != ".parquet":
        return {}
    frame = pl.read_parquet(path)
    return {str(r["id"]): r for r in frame.to_dicts()} if "id" in frame.columns else {}


def _labels(rows, where: str) -> tuple[dict[str, str], str]:
    labels = {
        str(r["relation"]): str(r["relation_label"])
        for r in rows
        if r.get("relation") and r.get("relation_label") and r["relation_label"] != r["relation"]
    }
    return labels, where if labels else "none"


def read_relations_file(path: Path) -> dict[str, str]:
    labels = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            labels[str(entry["relation"])] = str(entry["label"])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputError(path, f"expected a JSON object with `relation` and `label` ({exc})", line=number) from exc
    return labels


def attach_relation_labels(run: Run, items: list[dict], dataset: dict[str, dict], relations_file: Path | None) -> None:
    labels, source = _labels(items, "the items' relation_label column")
    if not labels:
        labels, source = _labels(dataset.values(), f"the dataset split ({_dataset_file(run)})")
    if not labels and relations_file is not None:
        labels, source = read_relations_file(relations_file), f"the relations file {relations_file}"
    run.relation_labels, run.labels_source = labels, source if labels else "none (bare relation ids)"


def item_correct(row: dict, columns: tuple[str, ...] = ("correct",)) -> bool | None:
    for key in columns:
        if row.get(key) is not None:
            return bool(row[key])
    return None
