"""`suite.json`: the suite, every cell's status and the model table, rewritten atomically after each change.

    {"schema": "kbench.suite.v1", "suite": {...the validated suite file...},
     "cells": {"smollm2__extraction__lama": {"model": "smollm2", "task": "extraction", "dataset": "lama",
               "run_dir": "cells/smollm2__extraction__lama", "status": "done", "attempts": 1,
               "error": null, "headline": {...}, "fingerprint": "..."}},
     "datasets": {"lama": {"path": "datasets/lama", "error": null}},
     "models": {"smollm2": {...model_table row...}}}

Nothing in it depends on time or on where the suite folder lives, so a suite killed and rerun
writes the same bytes as one that ran through. A cell counts as finished when suite.json says
done with the fingerprint of its current definition and its results.json exists; anything else
(pending, failed, or a cell whose model, task or dataset entry changed) is run again, and the
engine's journal resumes what it had computed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from kbench.io import read_json, stable_hash, write_json
from kbench.suite.spec import Cell, Suite

SCHEMA = "kbench.suite.v1"
FILE = "suite.json"
CELLS = "cells"


def cell_dir(out: Path, cell: Cell) -> Path:
    return out / CELLS / cell.key


def fingerprint(suite: Suite, cell: Cell, limit: int | None) -> str:
    """What a cell's outputs depend on in the suite file (and `--limit`)."""
    parts = [suite.model(cell.model), suite.task(cell.task), suite.dataset(cell.dataset)]
    return stable_hash([p.model_dump(mode="json") for p in parts] + [limit])


class SuiteState:
    def __init__(self, suite: Suite, out: Path, limit: int | None):
        self.out = out
        self.path = out / FILE
        before = read_json(self.path) if self.path.exists() else {}
        old_cells = before.get("cells", {})
        self.cells: dict[str, dict[str, Any]] = {}
        for cell in suite.cells:
            mark = fingerprint(suite, cell, limit)
            old = old_cells.get(cell.key, {})
            fresh = {
                "model": cell.model,
                "task": cell.task,
                "dataset": cell.dataset,
                "run_dir": f"{CELLS}/{cell.key}",
                "fingerprint": mark,
                "status": "pending",
                "attempts": 0,
                "error": None,
                "headline": None,
            }
            if old and old.get("fingerprint") != mark:
                # the suite file changed this cell: its folder holds a run of the old settings, which
                # the engine would refuse to resume into, so the cell starts over
                shutil.rmtree(cell_dir(out, cell), ignore_errors=True)
            self.cells[cell.key] = old if old.get("fingerprint") == mark else fresh
        self.document = {"schema": SCHEMA, "suite": suite.document(), "limit": limit}
        names = {d.name for d in suite.spec.datasets}
        self.datasets: dict[str, dict] = {k: v for k, v in before.get("datasets", {}).items() if k in names}
        labels = {m.label for m in suite.spec.models}
        self.models: dict[str, dict] = {k: v for k, v in before.get("models", {}).items() if k in labels}

    def finished(self, cell: Cell) -> bool:
        entry = self.cells[cell.key]
        return entry["status"] == "done" and (self.out / entry["run_dir"] / "results.json").is_file()

    def record(self, cell: Cell, outcome: dict[str, Any]) -> None:
        """A cell's outcome: {"status", "attempts", "error", "headline"}."""
        self.cells[cell.key].update(outcome)
        self.save()

    def record_model(self, label: str, row: dict[str, Any]) -> None:
        if self.models.get(label) != row:
            self.models[label] = row
            self.save()

    def record_dataset(self, name: str, entry: dict[str, Any]) -> None:
        self.datasets[name] = entry
        self.save()

    def failed(self) -> list[str]:
        return [key for key, entry in self.cells.items() if entry["status"] == "failed"]

    def save(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        models = dict(sorted(self.models.items()))
        write_json(
            self.path, {**self.document, "datasets": dict(sorted(self.datasets.items())), "models": models, "cells": self.cells}
        )
