"""`kbench suite run --executor ray` on a real two-node Ray cluster (one CPU each): every cell is a
Ray task, and the cells' outputs and suite.json are those of `--executor local`."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_kbench
from tests.suite_folders import cell_outputs, tiny_suite

pytest.importorskip("ray")

from tests.integration.ray_cluster import ENV, TwoNodeCluster  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    started = TwoNodeCluster()
    yield started
    started.stop()


def test_ray_cells_equal_local_cells(tmp_path, cluster):
    root = tiny_suite(tmp_path / "suite")
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    done = run_kbench("suite", "run", str(root / "suite.toml"), "--out", str(local), env={"KBENCH_CACHE": str(tmp_path / "c0")})
    assert done.returncode == 0, done.stderr
    done = run_kbench("suite", "run", str(root / "suite.toml"), "--out", str(on_ray), "--executor", "ray", "--ray-address",
                      cluster.address, env={**ENV, "KBENCH_CACHE": str(tmp_path / "c1")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert cell_outputs(on_ray) == cell_outputs(local)
    assert (on_ray / "suite.json").read_bytes() == (local / "suite.json").read_bytes()
    again = run_kbench("suite", "run", str(root / "suite.toml"), "--out", str(on_ray), "--executor", "ray", "--ray-address",
                       cluster.address, env={**ENV, "KBENCH_CACHE": str(tmp_path / "c1")})
    assert again.returncode == 0 and "4 cells done before" in again.stderr, again.stderr[-3000:]
    assert all(c["status"] == "done" for c in json.loads((on_ray / "suite.json").read_text())["cells"].values())
