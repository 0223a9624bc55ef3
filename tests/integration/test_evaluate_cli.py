"""`kbench evaluate TASK` through the real CLI, one test per task (kee: test_kee_cli.py, xteval:
test_xteval_e2e.py): every task writes the same envelope, items.parquet and a journal, prints its
headline with intervals, resumes, and turns bad options into one line and exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from kbench.evaluate.engine import validate
from tests.conftest import run_kbench
from tests.dataset_folders import FACTS, evolving_dataset, fact_rows, left_dataset, question_dataset

ENVELOPE_KEYS = {"schema", "task", "model", "dataset", "settings", "environment", "timing", "headline", "metrics", "items",
                 "protocol"}


def check_run(out: Path, task: str, items: int) -> dict:
    results = json.loads((out / "results.json").read_text())
    assert set(results) == ENVELOPE_KEYS and results["task"] == task and results["schema"] == "kbench.results.v2"
    validate(results, "results.v2.json")
    validate(results["metrics"], f"results.{task}.v2.json")
    assert pl.read_parquet(out / "items.parquet").height == items == results["items"]["count"]
    journalled = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    assert sum(len(unit["rows"]) for unit in journalled) == items
    for estimate in results["headline"].values():
        assert {"value", "n", "ci_low", "ci_high", "interval"} <= set(estimate)
    return results


def rerun_computes_nothing(args: list[str], out: Path) -> None:
    again = run_kbench(*args)
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "results.json").read_text())["timing"]["items_computed"] == 0


def test_extraction(tiny_causal_dir, tmp_path):
    dataset = question_dataset(tmp_path / "ds", fact_rows(FACTS))
    out = tmp_path / "run"
    args = ["evaluate", "extraction", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--limit", "4",
            "--max-new-tokens", "2", "--out", str(out), "--batch-size", "2", "--stop", "\n"]
    done = run_kbench(*args)
    assert done.returncode == 0, done.stderr
    results = check_run(out, "extraction", 4)
    assert results["metrics"]["stop"] == ["\n"] and results["settings"]["stop"] == ["\n"]
    assert "maple_accuracy" in done.stdout and "95% CI" in done.stdout
    # the default cloze prompt and the --limit sample each depart from MAPLE's procedure
    assert [d["id"] for d in results["protocol"]["deviations"]] == ["sample-limit", "prompt-form"]
    assert "protocol: 2 deviations from maple-extraction" in done.stdout and "  - prompt-form: --prompt cloze" in done.stdout
    assert "extraction (run): 0/4 items" in done.stderr and "4/4 items in" in done.stderr  # progress, not a terminal
    log = (out / "log.txt").read_text()
    assert "evaluate extraction: model" in log and "1 units, 4 items; 0 units journalled before" in log and "wrote" in log
    rerun_computes_nothing(args, out)
    assert "1 units journalled before, 0 to compute" in (out / "log.txt").read_text()  # the rerun appends
    bad = run_kbench("evaluate", "extraction", "--dataset", str(dataset), "--model", str(tiny_causal_dir),
                     "--split", "nope", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "no split 'nope'" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_kbench("evaluate", "extraction", "--dataset", str(dataset), "--model", str(tiny_causal_dir),
                     "--protocol", "lamma", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "--protocol" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_kbench("--log-level", "LOUD", "evaluate", "extraction", "--dataset", str(dataset), "--model", "x")
    assert bad.returncode == 2 and "--log-level LOUD" in bad.stderr and "Traceback" not in bad.stderr


@pytest.fixture(scope="module")
def left(shared_data, tmp_path_factory):
    return left_dataset(shared_data, tmp_path_factory.mktemp("left-cli"))


def test_truefalse(left, tiny_causal_dir, tmp_path):
    out = tmp_path / "run"
    args = ["evaluate", "truefalse", "--dataset", str(left), "--model", str(tiny_causal_dir), "--limit", "6", "--out", str(out)]
    done = run_kbench(*args)
    assert done.returncode == 0, done.stderr
    results = check_run(out, "truefalse", 6)
    assert set(results["headline"]) == {"accuracy", "pair_choice_accuracy"}
    rerun_computes_nothing(args, out)
    bad = run_kbench("evaluate", "truefalse", "--dataset", str(left), "--model", str(tiny_causal_dir),
                     "--setting", "open-book", "--out", str(tmp_path / "cli"))
    assert bad.returncode == 2, bad.stderr
    assert "--retriever" in bad.stderr and "Traceback" not in bad.stderr


def test_qa(tiny_causal_dir, tmp_path):
    dataset = evolving_dataset(tmp_path / "evo")
    out = tmp_path / "run"
    args = ["evaluate", "qa", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--max-new-tokens", "3",
            "--out", str(out)]
    done = run_kbench(*args)
    assert done.returncode == 0, done.stderr
    results = check_run(out, "qa", 5)
    assert "updated_em" in results["headline"] and "updated_em" in done.stdout
    assert results["protocol"]["faithful"] is True and "protocol: faithful to evolvingqa" in done.stdout
    rerun_computes_nothing(args, out)
    bad = run_kbench("evaluate", "qa", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--metric", "squad",
                     "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "--metric" in bad.stderr and "Traceback" not in bad.stderr
