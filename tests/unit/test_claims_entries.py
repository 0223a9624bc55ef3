"""Claims over several task entries of one model (scope "entries"), on a constructed suite: MAPLE-28
(DeCoRe with 10 masked heads as good as with 20, worse with more) and XTEVAL-16 (the same downstream
accuracy at three learning rates). Model "steady" answers alike at 10 and 20 heads and at every
learning rate, and loses at 40 heads; model "shaky" loses 40 points from 10 to 20 heads, gains
again at 40, and loses at the largest learning rate. The entries are told apart by the settings
their runs recorded."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from kbench.claims.verdicts import test_suite as claims_of_suite
from kbench.metrics.uncertainty import proportion

ITEMS = 200


def write_run(folder: Path, task: str, model: str, metrics: dict, settings: dict, rows: list[dict]) -> None:
    folder.mkdir(parents=True)
    headline = {"accuracy": proportion(sum(r["correct"] for r in rows), len(rows))}
    results = {"schema": "kbench.results.v2", "task": task, "model": {"name": model}, "headline": headline, "settings": settings,
               "metrics": metrics, "items": {"file": "items.parquet", "count": len(rows)}}
    (folder / "results.json").write_text(json.dumps(results))
    pl.DataFrame(rows).write_parquet(folder / "items.parquet")


def decore_run(right: int) -> tuple[dict, list[dict]]:
    """KEE with the baseline and DeCoRe; DeCoRe answers the first `right` items right."""
    metrics = {"per_technique": {"baseline": {"accuracy": proportion(100, ITEMS)}, "decore": {"accuracy": proportion(right, ITEMS)}}}
    rows = [{"id": f"decore::i{n}", "technique": "decore", "item_id": f"i{n}", "correct": n < right} for n in range(ITEMS)]
    return metrics, rows


def xteval_rows(right: int) -> list[dict]:
    return [{"id": f"iid/e0-s0-f0/q{n}", "kind": "query", "setting": "iid", "correct": n < right} for n in range(ITEMS)]


def constructed_suite(root: Path) -> Path:
    heads = {"steady": {10: 100, 20: 100, 40: 50}, "shaky": {10: 100, 20: 20, 40: 90}}
    rates = {"steady": {1e-5: 120, 3e-5: 120, 5e-5: 120}, "shaky": {1e-5: 120, 3e-5: 118, 5e-5: 40}}
    cells, tasks = {}, {}
    for model in heads:
        for count, right in heads[model].items():
            label = f"kee-decore{count}"
            metrics, rows = decore_run(right)
            metrics["technique_params"] = {"decore": {"retrieval_heads": count, "trials": 8}}
            cells[f"{model}__{label}__wiki"] = (root, "kee", model, metrics, {"limit": ITEMS}, rows, label, "wiki")
            tasks[label] = "kee"
        for lr, right in rates[model].items():
            label = f"xteval-lr{lr:g}"
            settings = {"finetune": {"lr": lr, "epochs": 3}}
            cells[f"{model}__{label}__lama"] = (root, "xteval", model, {}, settings, xteval_rows(right), label, "lama")
            tasks[label] = "xteval"
    grid = {}
    for key, (_, task, model, metrics, settings, rows, label, dataset) in cells.items():
        write_run(root / "cells" / key, task, model, metrics, settings, rows)
        grid[key] = {"model": model, "task": label, "dataset": dataset, "status": "done", "run_dir": f"cells/{key}"}
    suite = {"suite": {"name": "entries"}, "tasks": [{"task": task, "name": label} for label, task in tasks.items()]}
    (root / "suite.json").write_text(json.dumps({"schema": "kbench.suite.v1", "suite": suite, "cells": grid, "models": {}}))
    return root


def verdicts(results, label: str) -> dict[str, tuple[str, dict]]:
    [outcome] = [r for r in results if r.claim.label == label]
    return {t.model: (t.verdict, t.result) for t in outcome.cells}


def test_decore_head_counts_and_learning_rates_get_their_verdicts(tmp_path):
    folder = constructed_suite(tmp_path / "suite")
    tested = dict((chosen.name, results) for chosen, results in claims_of_suite(folder, ["maple", "xteval"]))

    same = verdicts(tested["maple"], "MAPLE-28 (10 vs 20 heads)")
    assert {m: v for m, (v, _) in same.items()} == {"steady": "supported", "shaky": "contradicted"}
    assert abs(same["shaky"][1]["estimate"]["value"] - 0.4) < 1e-9 and same["shaky"][1]["estimate"]["paired"] is True
    assert same["shaky"][1]["test"] == "decore accuracy at retrieval_heads = 10 − at 20, exact McNemar"
    more = verdicts(tested["maple"], "MAPLE-28 (more heads)")
    assert {m: v for m, (v, _) in more.items()} == {"steady": "supported", "shaky": "contradicted"}
    assert "at retrieval_heads = 40 − at 20" in more["steady"][1]["test"]  # the largest count above 20

    rates = verdicts(tested["xteval"], "XTEVAL-16")
    assert {m: v for m, (v, _) in rates.items()} == {"steady": "supported", "shaky": "contradicted"}
    shaky = rates["shaky"][1]
    assert abs(shaky["estimate"]["value"] + 0.4) < 1e-9 and shaky["estimate"]["n"] == ITEMS
    assert shaky["test"] == "downstream accuracy (iid): lr 5e-05 − lr 1e-05, the farthest of 3 pairs, exact McNemar"


def test_a_learning_rate_without_its_entry_leaves_the_claim_without_data(tmp_path):
    folder = constructed_suite(tmp_path / "suite")
    document = json.loads((folder / "suite.json").read_text())
    document["cells"] = {k: c for k, c in document["cells"].items() if c["task"] != "xteval-lr3e-05"}
    (folder / "suite.json").write_text(json.dumps(document))
    [(_, results)] = claims_of_suite(folder, ["xteval"])
    [outcome] = [r for r in results if r.claim.id == "XTEVAL-16"]
    assert not outcome.cells and outcome.skipped == ["steady on xteval / lama", "shaky on xteval / lama"]
