"""`standardize_runs` over hand-made run directories: CSV / markdown match the hand-computed scores."""

from __future__ import annotations

import csv
import json
import math

import pytest

from kbench.metrics.uncertainty import mean, proportion
from kbench.report.standardize import standardize_runs


def _run(tmp_path, name, results):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(results))
    return folder


def _envelope(task: str, model: str, headline: dict, settings: dict | None = None) -> dict:
    return {"schema": "kbench.results.v2", "task": task, "model": {"name": model}, "settings": settings or {},
            "headline": headline, "metrics": {}}


def _truefalse(model, setting, accuracy):
    return _envelope("truefalse", model, {"accuracy": proportion(round(accuracy * 10), 10),
                                          "uncalibrated_accuracy": proportion(5, 10)},
                     {"setting": setting, "retriever": None, "split": "dev"})


def _extraction(model, maple):
    # four correlated numbers of one run: only maple_accuracy counts as the extraction task
    return _envelope("extraction", model, {"maple_accuracy": proportion(round(maple * 5), 5),
                                           "exact_accuracy": proportion(0, 5), "rank1_accuracy": proportion(5, 5),
                                           "mean_gold_logprob": mean([-3.0, -2.0])})


def test_three_models_two_tasks(tmp_path):
    runs = [
        _run(tmp_path, "a-prior", _truefalse("a", "prior", 0.5)),
        _run(tmp_path, "b-prior", _truefalse("b", "prior", 0.6)),
        _run(tmp_path, "c-prior", _truefalse("c", "prior", 0.7)),
        _run(tmp_path, "a-ext", _extraction("a", 0.2)),
        _run(tmp_path, "b-ext", _extraction("b", 0.4)),
    ]
    out = tmp_path / "std"
    result = standardize_runs(runs, out)
    assert result["tasks"] == ["extraction:maple_accuracy", "truefalse:prior:dev:accuracy"]
    # prior: 0.5, 0.6, 0.7 -> z = -1.2247, 0, 1.2247 ; extraction: 0.2, 0.4 -> z = -1, 1 ; c has no extraction score
    s = 1 / math.sqrt(2 / 3)
    low, high = -s, s
    scale = lambda z: 100 * (z - low) / (high - low)  # noqa: E731
    std = result["standardized"]
    assert std["a"]["truefalse:prior:dev:accuracy"] == pytest.approx(0.0)
    assert std["c"]["truefalse:prior:dev:accuracy"] == pytest.approx(100.0)
    assert std["a"]["extraction:maple_accuracy"] == pytest.approx(scale(-1.0))
    assert std["c"]["extraction:maple_accuracy"] is None
    rows = list(csv.DictReader((out / "standardized.csv").open()))
    assert len(rows) == 5
    row = next(r for r in rows if r["model"] == "b" and r["task"].startswith("extraction"))
    assert float(row["raw"]) == 0.4 and float(row["z"]) == pytest.approx(1.0) and float(row["standardized"]) == pytest.approx(scale(1.0))
    table = (out / "standardized.md").read_text()
    assert "| a | 9.2 | 0.0 | 4.6 |" in table  # scale(-1) = 9.18; mean of 9.18 and 0
    assert result["mean_standardized"]["c"] == pytest.approx(100.0)


def test_one_headline_metric_per_task_also_for_v1_runs(tmp_path):
    from pathlib import Path

    from kbench.report.runs import load_run
    from kbench.report.standardize import run_scores

    golden = Path(__file__).resolve().parents[1] / "fixtures" / "results_v1"
    tasks = {task: run_scores(load_run(golden / task))[1] for task in ("extraction", "kee", "qa", "truefalse", "xteval")}
    assert {t: list(v) for t, v in tasks.items()} == {
        "extraction": ["extraction:maple_accuracy"], "kee": ["kee:accuracy"], "qa": ["qa:updated_em"],
        "truefalse": ["truefalse:prior:dev:accuracy"], "xteval": ["xteval:usable_knowledge"]}
    assert tasks["xteval"]["xteval:usable_knowledge"] == 0.305 and tasks["truefalse"]["truefalse:prior:dev:accuracy"] == 0.5
