"""`kbench build --executor ray` through the CLI on the real recipes: the same dataset as
`--executor local` on a real two-node Ray cluster (maple-wiki, LAMA), after the worker node is
killed mid-build, and after the driver is killed mid-stage (finished shards are reused).

Shards are small (`--shard-rows`) so every stage has several and both nodes get some.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from conftest import REPO_ROOT, run_kbench

pytest.importorskip("ray")

from ray_cluster import ENV, TwoNodeCluster  # noqa: E402

MAPLE = ["pipelines/maple-wiki.toml"]
LAMA = ["pipelines/lama-trex.toml", "--set", "load.max_per_relation=40"]  # 4.5k facts: small for CI


def kbench_build(recipe: list[str], out: Path, *extra: str):
    done = run_kbench("build", *recipe, "--out", str(out), *extra, env=ENV)
    assert done.returncode == 0, done.stderr[-3000:]


def events(run_dir: Path) -> list[dict]:
    path = run_dir / ".kbench" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def assert_same_dataset(got: Path, want: Path) -> None:
    """Same data files, rows and order, same stats and rejected rows, same manifest but the executor."""
    def files(run_dir: Path, pattern: str) -> list[str]:
        return sorted(str(p.relative_to(run_dir)) for p in run_dir.glob(pattern))

    assert files(got, "data/**/*.parquet") == files(want, "data/**/*.parquet")
    assert files(got, "rejected/*.parquet") == files(want, "rejected/*.parquet")
    for name in files(want, "data/**/*.parquet") + files(want, "rejected/*.parquet"):
        assert pl.read_parquet(got / name).equals(pl.read_parquet(want / name)), name
    for name in ("stats.json", "README.md"):
        assert (got / name).read_text() == (want / name).read_text(), name
    got_manifest, want_manifest = (json.loads((d / "manifest.json").read_text()) for d in (got, want))
    assert (got_manifest.pop("executor"), want_manifest.pop("executor")) == ("ray", "local")
    assert got_manifest == want_manifest


@pytest.fixture(scope="module")
def local_builds(tmp_path_factory, shared_data) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("local")
    kbench_build(MAPLE, folder / "maple")
    kbench_build(LAMA, folder / "lama")
    return {"maple": folder / "maple", "lama": folder / "lama"}


@pytest.fixture(scope="module")
def cluster():
    started = TwoNodeCluster()
    yield started
    started.stop()


@pytest.mark.parametrize("name, recipe, shard_rows", [("maple", MAPLE, "100"), ("lama", LAMA, "500")])
def test_two_node_build_equals_local(tmp_path, local_builds, cluster, name, recipe, shard_rows):
    out = tmp_path / name
    kbench_build(recipe, out, "--executor", "ray", "--ray-address", cluster.address, "--shard-rows", shard_rows)
    assert_same_dataset(out, local_builds[name])
    shards = [e for e in events(out) if "shard" in e]
    assert shards and {e["action"] for e in shards} == {"computed"}
    assert len({e["node"] for e in shards}) == 2  # both nodes computed shards


def test_worker_node_killed_mid_build_still_gives_the_same_dataset(tmp_path, local_builds, cluster):
    """The last test on `cluster`: it kills the cluster's worker node (raylet and workers, SIGKILL)."""
    out = tmp_path / "maple"
    proc = subprocess.Popen([sys.executable, "-m", "kbench", "build", *MAPLE, "--out", str(out), "--executor", "ray",
                             "--ray-address", cluster.address, "--workers", "2", "--shard-rows", "50"],
                            cwd=REPO_ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "log", "w"))
    try:
        deadline = time.monotonic() + 300
        while len({e["node"] for e in events(out) if "node" in e}) < 2:  # until both nodes have computed a shard
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "log").read_text()[-3000:]
            time.sleep(0.05)
        cluster.worker.kill()
        assert proc.poll() is None  # killed while the build was running
        assert proc.wait(timeout=600) == 0, (tmp_path / "log").read_text()[-3000:]
    finally:
        proc.kill()  # no-op when it finished
    assert_same_dataset(out, local_builds["maple"])
    after = [e for e in events(out) if e.get("stage") == "questions" and "node" in e]
    assert after and len({e["node"] for e in after}) == 1  # the later stages ran on the head node alone


def test_killed_driver_resumes_at_shard_granularity(tmp_path, local_builds):
    """The driver (with the Ray it started) killed after a shard of `link` finished: the rerun
    reuses the finished stages and that stage's finished shards and computes only the rest."""
    out = tmp_path / "maple"
    args = ["build", *MAPLE, "--out", str(out), "--executor", "ray", "--workers", "1", "--shard-rows", "100"]
    proc = subprocess.Popen([sys.executable, "-m", "kbench", *args], cwd=REPO_ROOT, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    shards = out / ".kbench" / "stages" / "02_link" / "shards"
    deadline = time.monotonic() + 300
    while not list(shards.glob("*/done.json")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len(events(out))
    assert not (out / ".kbench" / "stages" / "02_link" / "done.json").exists()
    kbench_build(MAPLE, out, "--executor", "ray", "--workers", "1", "--shard-rows", "100")
    rerun = events(out)[before:]
    assert [e["stage"] for e in rerun if e["action"] == "reused" and "shard" not in e] == ["clean", "triplets"]
    link = {e["shard"]: e["action"] for e in rerun if e["stage"] == "link" and "shard" in e}
    reused = {i for i, action in link.items() if action == "reused"}
    rows_in = next(s["rows_in"] for s in json.loads((out / "stats.json").read_text())["stages"] if s["id"] == "link")
    assert reused and len(link) == -(-rows_in // 100)  # shards of 100 rows: the finished ones are not recomputed
    assert all(action == "computed" for i, action in link.items() if i not in reused)
    assert_same_dataset(out, local_builds["maple"])
