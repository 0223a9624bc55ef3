"""`kill -9` at seeded random moments during `kbench build` and `kbench evaluate extraction`.

After each kill the same command is rerun; the final outputs must equal an uninterrupted run,
and finished units must not be recomputed: stages with a completion marker are reused (the
runner's event log says so) and journalled evaluation items are not computed again (the
run's `items_computed` counter says so).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import REPO_ROOT, run_kbench
from fixtures_models import tiny_causal_dir  # noqa: F401  (fixture)

RECIPE = str(REPO_ROOT / "pipelines" / "lama-trex.toml")
SMALL = ["--set", 'load.relations=["P19","P20","P27"]', "--set", "load.max_per_relation=300"]


def start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kbench", *args], cwd=REPO_ROOT, env={**os.environ, **env},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill_after(proc: subprocess.Popen, seconds: float) -> bool:
    """SIGKILL `proc` after `seconds`; False when it had already finished."""
    try:
        proc.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        return True


def dataset_rows(out: Path) -> dict[str, list]:
    return {str(p.relative_to(out)): pl.read_parquet(p).to_dicts() for p in sorted((out / "data").rglob("*.parquet"))}


def finished_stages(out: Path) -> set[str]:
    stages = out / ".kbench" / "stages"
    return {d.name.split("_", 1)[1] for d in stages.iterdir() if (d / "done.json").exists()} if stages.exists() else set()


def events(out: Path) -> list[dict]:
    path = out / ".kbench" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="module")
def cache_env(tmp_path_factory) -> dict:
    return {"KBENCH_CACHE": str(tmp_path_factory.mktemp("cache"))}


@pytest.fixture(scope="module")
def reference_build(tmp_path_factory, cache_env):
    out = tmp_path_factory.mktemp("reference") / "lama"
    started = time.monotonic()
    done = run_kbench("build", RECIPE, "--out", str(out), *SMALL, env=cache_env)
    assert done.returncode == 0, done.stderr
    return out, time.monotonic() - started


@pytest.mark.parametrize("seed", [1, 2])
def test_build_killed_at_random_points_resumes_to_identical_output(seed, reference_build, cache_env, tmp_path):
    reference, seconds = reference_build
    rng = random.Random(seed)
    out = tmp_path / "lama"
    for _ in range(2):  # two kills per seed, each at a fresh random moment
        kill_after(start(["build", RECIPE, "--out", str(out), *SMALL], cache_env), rng.uniform(0.1, 1.0) * seconds)
    finished = finished_stages(out)
    seen = len(events(out))
    done = run_kbench("build", RECIPE, "--out", str(out), *SMALL, env=cache_env)
    assert done.returncode == 0, done.stderr
    rerun = {e["stage"]: e["action"] for e in events(out)[seen:]}
    assert all(rerun[stage] == "reused" for stage in finished), (finished, rerun)
    assert dataset_rows(out) == dataset_rows(reference)
    assert json.loads((out / "stats.json").read_text()) == json.loads((reference / "stats.json").read_text())


def journal_items(run: Path) -> int:
    """Items in the journal's finished units (a line cut short by the kill is not a finished unit)."""
    journal = run / "journal.jsonl"
    if not journal.exists():
        return 0
    return sum(len(json.loads(line)["rows"]) for line in journal.read_bytes().split(b"\n") if line.endswith(b"}"))


def journal_units(run: Path) -> int:
    journal = run / "journal.jsonl"
    return sum(line.endswith(b"}") for line in journal.read_bytes().split(b"\n")) if journal.exists() else 0


def wait_for_units(proc: subprocess.Popen, run: Path, units: int, deadline: float = 300) -> None:
    """Return as soon as the journal holds `units` finished units (polled every 5 ms): the kill is
    timed on what the run has saved, never on a clock, so a machine faster or slower than the
    reference still gets its kill between a saved unit and the end."""
    give_up = time.monotonic() + deadline
    while journal_units(run) < units:
        if proc.poll() is not None or time.monotonic() > give_up:
            pytest.fail(f"the run ended (or stalled) before journalling {units} unit(s)")
        time.sleep(0.005)


def kill_after_first_unit(proc: subprocess.Popen, run: Path, extra_seconds: float) -> None:
    """SIGKILL `proc` `extra_seconds` after its journal holds a finished unit, so the kill always
    lands after a saved unit (a kill before the first unit would test nothing); it may land after
    the end, which the callers allow."""
    wait_for_units(proc, run, 1)
    kill_after(proc, extra_seconds)


def without_timing(results: dict) -> dict:
    return {k: v for k, v in results.items() if k != "timing"}


@pytest.mark.parametrize("seed", [4])
def test_extraction_killed_at_random_points_resumes_without_recomputing(seed, reference_build, cache_env, tmp_path,
                                                                        tiny_causal_dir):
    dataset, _ = reference_build
    args = ["evaluate", "extraction", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--limit", "700",
            "--batch-size", "16"]   # 3 units of 256 items
    # Each run gets its own result cache, so "not recomputed" is decided by the run directory alone.
    reference_run = tmp_path / "reference"
    done = run_kbench(*args, "--out", str(reference_run), env={"KBENCH_CACHE": str(tmp_path / "c0")})
    assert done.returncode == 0, done.stderr
    timing = json.loads((reference_run / "results.json").read_text())["timing"]
    total = timing["items_computed"]
    # the kill lands as soon as the journal holds 1 or 2 of the 3 units (an observable event, not a share of the
    # reference's time: timed kills raced a loaded machine, which journalled all 700 items before the kill landed)
    rng = random.Random(seed)
    run = tmp_path / "killed"
    proc = start([*args, "--out", str(run)], {"KBENCH_CACHE": str(tmp_path / "c1")})
    wait_for_units(proc, run, rng.choice([1, 2]))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    journalled = journal_items(run)
    assert 0 < journalled < total, (journalled, total)
    done = run_kbench(*args, "--out", str(run), env={"KBENCH_CACHE": str(tmp_path / "c1")})
    assert done.returncode == 0, done.stderr
    results = json.loads((run / "results.json").read_text())
    assert results["timing"]["items_computed"] == total - journalled
    # bit-identical to the uninterrupted run: the same bytes of items, the same numbers
    assert (run / "items.parquet").read_bytes() == (reference_run / "items.parquet").read_bytes()
    reference = json.loads((reference_run / "results.json").read_text())
    assert without_timing(results) == without_timing(reference)


@pytest.mark.parametrize("seed", [7])
def test_kee_killed_at_random_points_resumes_bit_identical(seed, reference_build, tmp_path, tiny_causal_dir):
    """KEE journals units of (technique or partition temperature, 64 items): a kill mid-run, then a
    rerun, gives the same bytes as an uninterrupted run; fitted vectors are reloaded from fits/."""
    dataset, _ = reference_build
    args = ["evaluate", "kee", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--limit", "130",
            "--techniques", "baseline,temp0.7,caa", "--k", "2", "--sweep-max", "2"]
    reference_run = tmp_path / "reference"
    started = time.monotonic()
    done = run_kbench(*args, "--out", str(reference_run), env={"KBENCH_CACHE": str(tmp_path / "c0")})
    assert done.returncode == 0, done.stderr
    seconds = time.monotonic() - started
    rng = random.Random(seed)
    run = tmp_path / "killed"
    kill_after_first_unit(start([*args, "--out", str(run)], {"KBENCH_CACHE": str(tmp_path / "c1")}),
                          run, rng.uniform(0.0, 0.3) * seconds)
    kill_after(start([*args, "--out", str(run)], {"KBENCH_CACHE": str(tmp_path / "c1")}), rng.uniform(0.3, 0.9) * seconds)
    units_journalled = journal_units(run)
    done = run_kbench(*args, "--out", str(run), env={"KBENCH_CACHE": str(tmp_path / "c1")})
    assert done.returncode == 0, done.stderr
    assert (run / "items.parquet").read_bytes() == (reference_run / "items.parquet").read_bytes()
    results = json.loads((run / "results.json").read_text())
    timing = results["timing"]
    assert 0 < units_journalled and timing["units_computed"] == timing["units_total"] - units_journalled
    reference = json.loads((reference_run / "results.json").read_text())
    assert without_timing(results) == without_timing(reference)
