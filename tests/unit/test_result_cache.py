"""ResultCache storage: descriptive columns (method, model, time) for `kbench cache info`,
added to caches written by older kbench versions; `clear` empties the file."""

from __future__ import annotations

import multiprocessing
import sqlite3

from kbench.models.result_cache import ResultCache


def test_old_cache_gains_descriptive_columns_and_summary_counts_them(tmp_path):
    path = tmp_path / "results.sqlite"
    with sqlite3.connect(path) as db:   # the schema of kbench before method/model/created were recorded
        db.execute("CREATE TABLE results (key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum TEXT NOT NULL)")
        db.execute("INSERT INTO results VALUES ('old', '1', 'x')")
    cache = ResultCache(path)
    cache.put_many({"a": [1, -0.5], "b": [2, -1.5]}, "rank_first_token", "tiny")
    cache.put_many({"c": "Paris"}, "generate", "tiny")
    summary = cache.summary()
    assert summary["rows"] == 4 and summary["path"] == str(path) and summary["bytes"] > 0
    assert summary["by_method"] == {"rank_first_token": 2, "generate": 1, "unknown": 1}
    assert summary["by_model"] == {"tiny": 3, "unknown": 1}
    assert summary["oldest"] <= summary["newest"]
    assert cache.get_many(["a", "c"]) == {"a": [1, -0.5], "c": "Paris"}
    assert cache.clear() == 4
    assert cache.summary()["rows"] == 0 and cache.get_many(["a"]) == {}


def _open_and_write(path: str) -> str:
    try:
        cache = ResultCache(path)
        cache.put_many({"shared": 1}, "generate", "tiny")
        cache.close()
        return "ok"
    except Exception as exc:  # noqa: BLE001 - the test reports what each process saw
        return repr(exc)


def test_processes_opening_a_new_cache_at_once_all_succeed(tmp_path):
    """The ranks of `accelerate launch` open one new cache file at the same moment. Before the
    set-up was serialised, about every trial had a rank fail with "database is locked" or
    "duplicate column name"."""
    ctx = multiprocessing.get_context("spawn")  # no fork of a process that may hold torch threads
    with ctx.Pool(8) as pool:
        for trial in range(10):
            path = str(tmp_path / f"trial{trial}" / "results.sqlite")
            assert pool.map(_open_and_write, [path] * 8) == ["ok"] * 8
            assert ResultCache(path).get_many(["shared"]) == {"shared": 1}
