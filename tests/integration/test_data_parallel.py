"""Evaluations data-parallel under `accelerate launch` (2 CPU processes over gloo): the same
fixed units, split between processes, one journal, results merged once by the main process.
The outputs must equal a single-process run's, byte for byte."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import REPO_ROOT, run_kbench
from tests.fixtures_models import tiny_causal_dir  # noqa: F401
from tests.question_rows import question_row

OBJECTS = ["Paris", "Berlin", "Rome", "Madrid", "Warsaw", "Ulm", "Japan", "Finland"]
# Both runs use one thread per process, so a difference could only come from the sharding.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def write_dataset(root: Path, n: int) -> Path:
    rows = [question_row(id=f"q{i:04d}", relation=f"P{i % 3}", subject=f"Entity {i}", object=OBJECTS[i % len(OBJECTS)],
                         answers=[OBJECTS[i % len(OBJECTS)]], prompt_cloze=f"Entity {i} is located in",
                         question=f"Where is Entity {i}?", frequency_bin=("head", "tail")[i % 2]) for i in range(n)]
    (root / "data" / "default").mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(root / "data" / "default" / "test.parquet")
    return root


def launch(args: list[str], env: dict) -> subprocess.CompletedProcess:
    launcher = shutil.which("accelerate", path=os.path.dirname(sys.executable))
    command = [launcher, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "kbench", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=REPO_ROOT,
                          env={**os.environ, **env, "ACCELERATE_USE_CPU": "1"})


def without_timing(path: Path) -> dict:
    results = json.loads(path.read_text())
    results.pop("timing")
    return results


@pytest.mark.parametrize("task, n, extra", [
    ("extraction", 600, ["--max-new-tokens", "3"]),                        # 3 units of 256 items
    ("kee", 150, ["--techniques", "baseline,temp0.7", "--k", "2", "--sweep-max", "2"]),   # 3 units per stage
])
def test_two_processes_equal_one(task, n, extra, tiny_causal_dir, tmp_path):
    dataset = write_dataset(tmp_path / "dataset", n)
    args = ["evaluate", task, "--dataset", str(dataset), "--model", str(tiny_causal_dir), *extra]
    single = run_kbench(*args, "--out", str(tmp_path / "single"), env={**ONE_THREAD, "KBENCH_CACHE": str(tmp_path / "c1")})
    assert single.returncode == 0, single.stderr[-3000:]
    parallel = launch([*args, "--out", str(tmp_path / "parallel")], {**ONE_THREAD, "KBENCH_CACHE": str(tmp_path / "c2")})
    assert parallel.returncode == 0, parallel.stderr[-3000:]
    journal = [json.loads(line) for line in (tmp_path / "parallel" / "journal.jsonl").read_text().splitlines()]
    assert len(journal) >= 3   # several units, computed by two processes
    assert (tmp_path / "parallel" / "items.parquet").read_bytes() == (tmp_path / "single" / "items.parquet").read_bytes()
    assert without_timing(tmp_path / "parallel" / "results.json") == without_timing(tmp_path / "single" / "results.json")


def test_a_killed_parallel_run_resumes(tiny_causal_dir, tmp_path):
    """Journalled units survive; the rerun (here on one process) computes only the rest."""
    dataset = write_dataset(tmp_path / "dataset", 600)
    args = ["evaluate", "extraction", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--max-new-tokens", "3",
            "--out", str(tmp_path / "run")]
    reference = run_kbench(*args[:-1], str(tmp_path / "reference"), env={**ONE_THREAD, "KBENCH_CACHE": str(tmp_path / "c0")})
    assert reference.returncode == 0, reference.stderr[-3000:]
    parallel = launch(args, {**ONE_THREAD, "KBENCH_CACHE": str(tmp_path / "c1")})
    assert parallel.returncode == 0, parallel.stderr[-3000:]
    journal = tmp_path / "run" / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:1]) + lines[1][:100])   # as if killed while the second unit was written
    (tmp_path / "run" / "results.json").unlink()
    again = run_kbench(*args, env={**ONE_THREAD, "KBENCH_CACHE": str(tmp_path / "c1")})
    assert again.returncode == 0, again.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["timing"]["items_computed"] == 600 - len(json.loads(lines[0])["rows"])
    assert (tmp_path / "run" / "items.parquet").read_bytes() == (tmp_path / "reference" / "items.parquet").read_bytes()
