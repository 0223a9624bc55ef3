"""Every evaluation task through the real CLI on the real SmolLM2, at small --limit: one envelope
(the same top-level keys), items.parquet and a journal for each, and one `kbench report` over the
runs of all five tasks that renders."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from kbench.evaluate.engine import validate
from tests.conftest import REPO_ROOT, run_kbench
from tests.dataset_folders import evolving_dataset

pytestmark = pytest.mark.slow

ENVELOPE_KEYS = {"schema", "task", "model", "dataset", "settings", "environment", "timing", "headline", "metrics", "items",
                 "protocol"}


@pytest.fixture(scope="module")
def lama_probe(tmp_path_factory, shared_data) -> Path:
    out = tmp_path_factory.mktemp("probe") / "lama"
    done = run_kbench("build", str(REPO_ROOT / "pipelines" / "lama.toml"), "--out", str(out), "--data-dir", str(shared_data))
    assert done.returncode == 0, done.stderr
    return out


def task_commands(lama: Path, left: Path, evolving: Path, runs: Path) -> dict[str, list[str]]:
    common = ["--model", "smollm2-135m"]
    return {
        "extraction": ["evaluate", "extraction", "--dataset", str(lama), *common, "--limit", "24", "--out", str(runs / "extraction")],
        "kee": ["evaluate", "kee", "--dataset", str(lama), *common, "--limit", "6", "--techniques", "baseline,genread",
                "--k", "2", "--sweep-max", "2", "--temperatures", "0.7", "--technique-param=genread.document_tokens=16",
                "--out", str(runs / "kee")],
        "xteval": ["evaluate", "xteval", "--dataset", str(lama), *common, "--limit", "60", "--extraction", "discrete",
                   "--epochs", "1", "--seeds", "1", "--lr", "1e-4", "--train-batch-size", "4", "--micro-batch-size", "4",
                   "--negatives-per-type", "1", "--distractors-per-type", "2", "--out", str(runs / "xteval")],
        "truefalse": ["evaluate", "truefalse", "--dataset", str(left), *common, "--limit", "6", "--out", str(runs / "truefalse")],
        "qa": ["evaluate", "qa", "--dataset", str(evolving), *common, "--out", str(runs / "qa")],
    }


def test_every_task_writes_one_envelope_and_one_report_renders(lama_probe, built_left, tmp_path):
    evolving = evolving_dataset(tmp_path / "evolving")
    runs = tmp_path / "runs"
    for task, args in task_commands(lama_probe, built_left, evolving, runs).items():
        done = run_kbench(*args, timeout=1200)
        assert done.returncode == 0, (task, done.stderr[-3000:])
        results = json.loads((runs / task / "results.json").read_text())
        assert set(results) == ENVELOPE_KEYS and results["task"] == task, task
        validate(results, "results.v2.json")
        validate(results["metrics"], f"results.{task}.v2.json")
        assert results["model"]["weights"], task
        assert pl.read_parquet(runs / task / "items.parquet").height == results["items"]["count"] > 0, task
        assert (runs / task / "journal.jsonl").stat().st_size > 0, task
    report = run_kbench("report", *(str(runs / t) for t in ("extraction", "kee", "xteval", "truefalse", "qa")),
                        "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr[-3000:]
    html = (tmp_path / "report" / "index.html").read_text()
    assert "protocol not recorded" not in html  # every task names the procedure behind its numbers
    for task in ("extraction", "kee", "xteval", "truefalse", "qa"):
        assert task in html
