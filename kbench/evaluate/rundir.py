"""The run directory of one evaluation command, shared by every evaluation task.

    with RunDir(out, task="extraction", config=cfg) as run:
        todo = [item for item in items if item["id"] not in run.done_ids()]
        ... run.append(rows) after each chunk ...
        run.finalize(rows_in_order, results, "results.extraction.v1.json")

Contract:
- `config` is everything that changes the rows (model identity, dataset, split, prompt,
  seed...). It is written to `config.json` on first use; reopening the folder with a different
  config is a `UserError` naming the keys that differ, so two runs never mix their rows.
- One process at a time: an exclusive lock on `.lock` (released when the process ends, so a
  killed run never leaves a stale lock).
- `append(rows)` adds rows to `journal.jsonl` and fsyncs: a finished item survives a crash.
  A line cut short by a crash is dropped (and truncated away) when the folder is reopened.
- `finalize` writes `items.jsonl`, `items.parquet` and `results.json` atomically; results are
  validated against their versioned schema in `schemas/` first.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from kbench.errors import UserError
from kbench.io import load_schema, read_json, write_json, write_jsonl, write_parquet

def validate_results(results: dict, schema_name: str) -> None:
    from jsonschema import Draft202012Validator

    schema = load_schema(schema_name)
    error = next(Draft202012Validator(schema).iter_errors(results), None)
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top)"
        raise AssertionError(f"results do not match schemas/{schema_name} at {where}: {error.message}")


class RunDir:
    def __init__(self, path: str | Path, task: str, config: dict[str, Any]):
        self.path = Path(path)
        self.task = task
        self.config = {"task": task, **config}
        self.journal = self.path / "journal.jsonl"
        self._lock_fh = None
        self._rows: list[dict] = []

    def __enter__(self) -> RunDir:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create the run directory {self.path}: {exc.strerror}") from exc
        self._lock_fh = open(self.path / ".lock", "a")
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self._lock_fh.close()
            raise UserError(f"{self.path} is in use by another kbench process") from exc
        self._check_config()
        self._rows = self._read_journal()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._lock_fh is not None:
            fcntl.flock(self._lock_fh, fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

    def _check_config(self) -> None:
        config_path = self.path / "config.json"
        canonical = json.loads(json.dumps(self.config, default=str))
        if config_path.exists():
            stored = read_json(config_path)
            if stored != canonical:
                differ = sorted(k for k in set(stored) | set(canonical) if stored.get(k) != canonical.get(k))
                raise UserError(f"{self.path} holds a different run (differs in: {', '.join(differ)}); "
                                f"use another --out or delete the folder")
        else:
            write_json(config_path, canonical)

    def _read_journal(self) -> list[dict]:
        if not self.journal.exists():
            return []
        rows, good_bytes = [], 0
        with open(self.journal, "rb") as fh:
            for raw in fh:
                try:
                    if not raw.endswith(b"\n"):
                        raise ValueError("cut short")
                    rows.append(json.loads(raw))
                except ValueError:
                    break  # a crash mid-write: keep the rows before it
                good_bytes += len(raw)
        if good_bytes != self.journal.stat().st_size:
            os.truncate(self.journal, good_bytes)
        return rows

    def done_ids(self) -> set[str]:
        return {row["id"] for row in self._rows}

    def rows(self) -> list[dict]:
        return list(self._rows)

    def append(self, rows: list[dict]) -> None:
        if not rows:
            return
        data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True, default=str) + "\n" for r in rows)
        with open(self.journal, "a", encoding="utf-8") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        self._rows.extend(rows)

    def finalize(self, rows: list[dict], results: dict, schema_name: str) -> None:
        import polars as pl

        validate_results(results, schema_name)
        write_jsonl(self.path / "items.jsonl", rows)
        write_parquet(self.path / "items.parquet", pl.DataFrame(rows, infer_schema_length=None))
        write_json(self.path / "results.json", results)
