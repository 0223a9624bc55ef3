"""scripts/baseline_identity.py `compare` on synthetic run folders: identical up to the ignored fields
(environment, timing, where the weights lie), and every other difference in items or results caught."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import REPO_ROOT

_spec = importlib.util.spec_from_file_location("baseline_identity", REPO_ROOT / "scripts" / "baseline_identity.py")
baseline = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(baseline)

RESULTS = {"schema": "kbench.results.v2", "task": "extraction", "settings": {"limit": 20, "prompt": "cloze"},
           "metrics": {"overall": {"maple_accuracy": {"k": 3, "n": 20, "value": 0.15}}},
           "model": {"name": "smollm2-135m", "weights": {"sha256": "b179", "file": "/venv/a.gguf", "converted_folder": "/c/1"}},
           "environment": {"kbench_commit": "bd5e16d", "threads": 2}, "timing": {"seconds": 24.5}}


def write_run(root: Path, results: dict = RESULTS, answers: tuple[str, ...] = ("Paris", "Rome")) -> Path:
    """A run folder of every baseline command: items.parquet, items.jsonl, a side table, results.json."""
    for name in baseline.COMMANDS:
        run = root / name
        run.mkdir(parents=True)
        items = pl.DataFrame({"id": [f"q{i}" for i in range(len(answers))], "answer": list(answers)})
        items.write_parquet(run / "items.parquet")
        items.write_ndjson(run / "items.jsonl")
        items.head(1).write_parquet(run / "known_facts.parquet")
        (run / "results.json").write_text(json.dumps(results))
        (run / "log.txt").write_text(f"took {results['timing']['seconds']} s\n")  # logs are never compared
    return root


def test_runs_equal_but_for_environment_timing_and_weight_paths_are_identical(tmp_path, capsys):
    weights = {"sha256": "b179", "file": "/other/a.gguf", "converted_folder": "/d/2"}
    moved = {**RESULTS, "environment": {"kbench_commit": "abc1234", "threads": 16}, "timing": {"seconds": 3.0},
             "model": {"name": "smollm2-135m", "weights": weights}}
    assert baseline.compare(write_run(tmp_path / "before"), write_run(tmp_path / "after", moved)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:-1] == [f"{name}: identical" for name in baseline.COMMANDS]
    assert lines[-1] == "12 of 12 identical"


@pytest.mark.parametrize("change, expected", [
    ({"metrics": {"overall": {"maple_accuracy": {"k": 4, "n": 20, "value": 0.2}}}},
     "results.json differs at metrics.overall.maple_accuracy.k, metrics.overall.maple_accuracy.value"),
    ({"settings": {"limit": 20}}, "results.json differs at settings.prompt"),
    ({"model": {"name": "smollm2-135m", "weights": {"sha256": "ffff", "file": "/venv/a.gguf", "converted_folder": "/c/1"}}},
     "results.json differs at model.weights.sha256"),
])
def test_a_changed_result_is_named(tmp_path, capsys, change, expected):
    assert baseline.compare(write_run(tmp_path / "before"), write_run(tmp_path / "after", {**RESULTS, **change})) == 1
    assert capsys.readouterr().out.splitlines()[0] == f"extraction-cloze: {expected}"


def test_changed_items_and_missing_files_are_named(tmp_path, capsys):
    before = write_run(tmp_path / "before")
    after = write_run(tmp_path / "after", answers=("Paris", "Milan"))
    (after / "choice" / "known_facts.parquet").unlink()
    shutil.rmtree(after / "truefalse")
    assert baseline.compare(before, after) == 1
    lines = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines()[:-1])
    assert lines["extraction-cloze"] == "items.jsonl bytes differ; items.parquet bytes differ"
    assert lines["choice"] == "only in one run: known_facts.parquet; items.jsonl bytes differ; items.parquet bytes differ"
    assert lines["truefalse"] == "results.json missing"
