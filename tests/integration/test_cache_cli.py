"""`kbench cache info` / `kbench cache clear` and `--no-cache`, through the real CLI on a tiny model."""

from __future__ import annotations

import json

from tests.conftest import run_kbench
from tests.fixtures_models import tiny_causal_dir  # noqa: F401
from tests.unit.test_extraction import write_dataset_folder


def _info(cache_dir) -> dict:
    done = run_kbench("cache", "info", "--json", "--cache-dir", str(cache_dir))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_cache_info_clear_and_no_cache(tiny_causal_dir, tmp_path):  # noqa: F811
    cache_dir = tmp_path / "cache"
    assert _info(cache_dir)["rows"] == 0 and not (cache_dir / "results.sqlite").exists()
    dataset = write_dataset_folder(tmp_path / "ds")
    evaluate = ["evaluate", "extraction", "--dataset", str(dataset), "--model", str(tiny_causal_dir),
                "--max-new-tokens", "2"]
    env = {"KBENCH_CACHE": str(cache_dir)}

    done = run_kbench(*evaluate, "--out", str(tmp_path / "run1"), env=env)
    assert done.returncode == 0, done.stderr
    info = _info(cache_dir)
    assert info["by_method"] == {"generate": 9, "rank_first_token": 9} and info["rows"] == 18
    assert info["by_model"] == {str(tiny_causal_dir): 18} and info["oldest"] <= info["newest"]
    text = run_kbench("cache", "info", "--cache-dir", str(cache_dir)).stdout
    assert "rows:    18" in text and "generate: 9" in text and str(cache_dir / "results.sqlite") in text

    (cache_dir / "results.sqlite").unlink()   # --no-cache neither reads nor writes the cache
    for suffix in ("-wal", "-shm"):
        (cache_dir / f"results.sqlite{suffix}").unlink(missing_ok=True)
    done = run_kbench(*evaluate, "--no-cache", "--out", str(tmp_path / "run2"), env=env)
    assert done.returncode == 0, done.stderr
    assert not (cache_dir / "results.sqlite").exists()
    run1, run2 = (json.loads((tmp_path / r / "results.json").read_text()) for r in ("run1", "run2"))
    assert run1["overall"] == run2["overall"]

    assert run_kbench(*evaluate, "--out", str(tmp_path / "run3"), env=env).returncode == 0
    declined = run_kbench("cache", "clear", "--cache-dir", str(cache_dir))   # no terminal to confirm on
    assert declined.returncode == 2 and "nothing deleted" in declined.stderr and _info(cache_dir)["rows"] == 18
    cleared = run_kbench("cache", "clear", "--yes", "--cache-dir", str(cache_dir))
    assert cleared.returncode == 0 and "deleted 18" in cleared.stdout
    assert _info(cache_dir)["rows"] == 0
