"""Evaluations data-parallel under `accelerate launch` (2 CPU processes over gloo): the same
fixed units, split between processes, one journal, results merged once by the main process.
The outputs must equal a single-process run's, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import run_kbench
from tests.launchers import accelerate_launch
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
    parallel = accelerate_launch([*args, "--out", str(tmp_path / "parallel")], {**ONE_THREAD, "KBENCH_CACHE": str(tmp_path / "c2")})
    assert parallel.returncode == 0, parallel.stderr[-3000:]
    units = {name: [json.loads(line)["unit"] for line in (tmp_path / name / "journal.jsonl").read_text().splitlines()]
             for name in ("single", "parallel")}
    # every unit exactly once: two processes that each thought they were alone would journal each twice
    assert len(units["single"]) >= 3 and sorted(units["parallel"]) == sorted(units["single"])
    assert (tmp_path / "parallel" / "items.parquet").read_bytes() == (tmp_path / "single" / "items.parquet").read_bytes()
    assert without_timing(tmp_path / "parallel" / "results.json") == without_timing(tmp_path / "single" / "results.json")


def test_a_killed_parallel_run_resumes(tiny_causal_dir, tmp_path):
    """Journalled units survive; the rerun (here on one process) computes only the rest."""
    dataset = write_dataset(tmp_path / "dataset", 600)
    args = ["evaluate", "extraction", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--max-new-tokens", "3",
            "--out", str(tmp_path / "run")]
    reference = run_kbench(*args[:-1], str(tmp_path / "reference"), env={**ONE_THREAD, "KBENCH_CACHE": str(tmp_path / "c0")})
    assert reference.returncode == 0, reference.stderr[-3000:]
    parallel = accelerate_launch(args, {**ONE_THREAD, "KBENCH_CACHE": str(tmp_path / "c1")})
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
