"""A 2-model x 2-task suite of tiny real models, for the suite tests (local and Ray)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.dataset_folders import FACTS, question_dataset
from tests.fixtures_models import build_tiny_causal



def suite_text(model_a: Path, model_b: Path | str) -> str:
    return f"""[suite]
name = "tiny"
retries = 1
retry_wait = 0.0

[[models]]
model = "{model_a}"
name = "tiny-a"
batch_size = 4
[models.meta]
release_date = 2024-11-01
training_tokens = 1e6

[[models]]
model = "{model_b}"
name = "tiny-b"

[[datasets]]
name = "facts"
path = "facts"

[[tasks]]
task = "extraction"
name = "cloze"
[tasks.settings]
max_new_tokens = 2
limit = 8

[[tasks]]
task = "extraction"
name = "question"
[tasks.settings]
prompt = "question"
max_new_tokens = 2
"""


def tiny_suite(root: Path) -> Path:
    """`root` with two tiny models of different weights, a 15-fact dataset and suite.toml."""
    build_tiny_causal(root / "model-a", seed=0)
    build_tiny_causal(root / "model-b", seed=1, layers=2)
    bins = ("head", "torso", "tail")
    question_dataset(root / "facts", [
        {"id": f"q{i}", "relation": r, "subject": s, "object": o, "answers": [o], "prompt_cloze": f"{s} is in",
         "frequency": 1000 // (i + 1), "frequency_bin": bins[i * 3 // 15]}
        for i, (r, s, o) in enumerate(FACTS * 3)])
    (root / "suite.toml").write_text(suite_text(root / "model-a", root / "model-b"))
    return root


def cell_outputs(out: Path) -> dict[str, object]:
    """Every cell's items (bytes) and results (without timing), keyed by cell and file."""
    found = {}
    for cell in sorted((out / "cells").iterdir()):
        found[f"{cell.name}/items.parquet"] = (cell / "items.parquet").read_bytes()
        results = json.loads((cell / "results.json").read_text())
        found[f"{cell.name}/results.json"] = {k: v for k, v in results.items() if k != "timing"}
    return found


def finished_suite_json(root: Path, models: list[str], columns: list[tuple[str, str]]) -> Path:
    """A suite folder whose suite.json holds every (model, task, dataset) cell finished, one failed: what
    `kbench suite status` reads, without running a model."""
    cells = {}
    for m, model in enumerate(models):
        for c, (task, dataset) in enumerate(columns):
            value = 0.1 + 0.05 * c + 0.01 * m
            estimate = {"value": value, "ci_low": value - 0.05, "ci_high": value + 0.05, "n": 200}
            cells[f"{model}__{task}__{dataset}"] = {"model": model, "task": task, "dataset": dataset, "status": "done",
                                                    "headline": {"accuracy": estimate}, "attempts": 1}
    cells[f"{models[-1]}__{task}__{dataset}"].update(status="failed", headline=None, error="out of memory", attempts=2)
    suite = {"suite": {"name": "wide"}, "tasks": [{"task": "extraction", "name": task} for task, _ in columns]}
    root.mkdir(parents=True, exist_ok=True)
    (root / "suite.json").write_text(json.dumps({"schema": "kbench.suite.v1", "suite": suite, "cells": cells, "models": {}}))
    return root
