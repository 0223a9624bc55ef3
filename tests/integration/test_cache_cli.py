"""`kbench cache info` / `kbench cache clear` through the real CLI, on a cache filled by
`kbench evaluate extraction` with a tiny model."""

from __future__ import annotations

import json

from tests.conftest import run_kbench
from tests.unit.test_extraction import write_dataset_folder


def _info(cache_dir) -> dict:
    done = run_kbench("cache", "info", "--json", "--cache-dir", str(cache_dir))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_cache_info_and_clear(tiny_causal_dir, tmp_path):
    cache_dir = tmp_path / "cache"
    assert _info(cache_dir)["rows"] == 0 and not (cache_dir / "results.sqlite").exists()   # info creates nothing
    dataset = write_dataset_folder(tmp_path / "ds")
    done = run_kbench("evaluate", "extraction", "--dataset", str(dataset), "--model", str(tiny_causal_dir),
                      "--max-new-tokens", "2", "--out", str(tmp_path / "run"), env={"KBENCH_CACHE": str(cache_dir)})
    assert done.returncode == 0, done.stderr

    info = _info(cache_dir)
    rows = info["rows"]
    assert rows >= 9 and sum(info["by_method"].values()) == rows and "unknown" not in info["by_method"]
    assert info["by_model"] == {str(tiny_causal_dir): rows} and info["oldest"] <= info["newest"]
    text = run_kbench("cache", "info", "--cache-dir", str(cache_dir)).stdout
    assert f"rows:    {rows}" in text and "per method:" in text and str(cache_dir / "results.sqlite") in text

    declined = run_kbench("cache", "clear", "--cache-dir", str(cache_dir))   # no terminal to confirm on
    assert declined.returncode == 2 and "nothing deleted" in declined.stderr and _info(cache_dir)["rows"] == rows
    cleared = run_kbench("cache", "clear", "--yes", "--cache-dir", str(cache_dir))
    assert cleared.returncode == 0 and f"deleted {rows}" in cleared.stdout
    assert _info(cache_dir)["rows"] == 0
