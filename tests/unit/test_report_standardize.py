"""`standardize_runs` over hand-made run directories: CSV / markdown match the hand-computed scores."""

from __future__ import annotations

import csv
import json
import math

import pytest

from kbench.errors import UserError
from kbench.report.standardize import standardize_runs
from tests.conftest import run_kbench


def _run(tmp_path, name, results):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps(results))
    return folder


def _truefalse(model, setting, accuracy):
    return {"task": "truefalse", "model": {"name": model}, "overall": {"n": 10, "accuracy": accuracy},
            "headline": {f"truefalse:{setting}:dev:accuracy": accuracy}}


def test_three_models_two_tasks(tmp_path):
    runs = [
        _run(tmp_path, "a-prior", _truefalse("a", "prior", 0.5)),
        _run(tmp_path, "b-prior", _truefalse("b", "prior", 0.6)),
        _run(tmp_path, "c-prior", _truefalse("c", "prior", 0.7)),
        # an extraction-style result without `headline`: accuracy-like overall numbers are the tasks
        _run(tmp_path, "a-ext", {"task": "extraction", "model": {"name": "a"},
                                 "overall": {"n": 5, "maple_accuracy": 0.2, "mean_gold_logprob": -3.0}}),
        _run(tmp_path, "b-ext", {"task": "extraction", "model": {"name": "b"},
                                 "overall": {"n": 5, "maple_accuracy": 0.4, "mean_gold_logprob": -2.0}}),
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


def test_ambiguous_runs_and_cli(tmp_path):
    one = _run(tmp_path, "one", _truefalse("a", "prior", 0.5))
    two = _run(tmp_path, "two", _truefalse("a", "prior", 0.6))
    with pytest.raises(UserError, match="both give"):
        standardize_runs([one, two], tmp_path / "x")
    other = _run(tmp_path, "three", _truefalse("a", "open-book-gold", 0.9))
    proc = run_kbench("report", "standardize", str(one), str(other), "--out", str(tmp_path / "cli"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cli" / "standardized.csv").is_file()
    bad = run_kbench("report", "standardize", str(one), str(tmp_path / "missing"), "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
