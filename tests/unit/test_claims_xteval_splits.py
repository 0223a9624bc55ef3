"""XTEVAL-8 (variation across train/test splits is negligible) on a constructed suite: one model's
split seeds agree (supported within the declared margin), the other's differ by 0.3 (contradicted)."""

from __future__ import annotations

import json

from kbench.claims.verdicts import test_suite as claims_of_suite
from tests.integration.test_claims_papers import write_run, xteval_metrics


def runs(accuracy_by_split: dict[int, list[float]]) -> list[dict]:
    return [
        {"extraction_seed": 0, "split_seed": split, "finetune_seed": f, "downstream_accuracy": acc}
        for split, values in accuracy_by_split.items()
        for f, acc in enumerate(values)
    ]


def test_split_spread_verdicts(tmp_path):
    spreads = {
        "steady": {0: [0.60, 0.61, 0.59], 1: [0.60, 0.60, 0.61], 2: [0.59, 0.60, 0.60]},
        "shaky": {0: [0.30, 0.31, 0.29], 1: [0.60, 0.61, 0.59], 2: [0.45, 0.46, 0.44]},
    }
    cells = {}
    for model, by_split in spreads.items():
        metrics = xteval_metrics()
        metrics["settings"]["iid"]["runs"] = runs(by_split)
        key = f"{model}__xteval__data"
        write_run(tmp_path / "cells" / key, "xteval", model, metrics)
        cells[key] = {"model": model, "task": "xteval", "dataset": "data", "status": "done", "run_dir": f"cells/{key}"}
    suite = {"suite": {"name": "splits"}, "tasks": [{"task": "xteval", "name": "xteval"}]}
    (tmp_path / "suite.json").write_text(json.dumps({"schema": "kbench.suite.v1", "suite": suite, "cells": cells, "models": {}}))
    [(_, results)] = claims_of_suite(tmp_path, ["xteval"])
    [claim8] = [r for r in results if r.claim.id == "XTEVAL-8"]
    verdicts = {t.model: t.verdict for t in claim8.cells}
    assert verdicts == {"steady": "supported", "shaky": "contradicted"}
    shaky = next(t for t in claim8.cells if t.model == "shaky").result
    assert abs(shaky["estimate"]["value"] - 0.30) < 1e-9
    assert "split seed 1 − split seed 0, of 3 split seeds" in shaky["test"]
