"""SPARQL faults during a build: a fault-injecting proxy before a real `oxigraph serve-read-only`.

For every fault the build either completes with the same dataset as a fault-free run, or stops
with a clear error after bounded retries. In both cases no partial stage is marked complete and
the query cache holds only sound entries, so a rerun finishes the job without repeating answered
queries.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from kbench.construct.recipe import load_recipe
from kbench.construct.runner import run_recipe
from kbench.errors import UserError
from kbench.io import stable_hash
from kbench.sources import sparql_client

from conftest import run_kbench
from sparql_servers import FaultProxy, lama_check_recipe, make_lama_store, oxigraph_server

ALL_FAULTS = ["429", "pass", "500", "pass", "502", "pass", "503", "pass", "hang", "pass",
              "cut", "pass", "truncated", "pass", "html"]


@pytest.fixture(scope="module")
def served(shared_data, tmp_path_factory):
    """(subset file, endpoint URL): the T-REx facts in a store served by oxigraph."""
    trex = shared_data / "lama_trex"
    subset, store = make_lama_store(tmp_path_factory.mktemp("sparql-faults"),
                                    ["--trex-dir", str(trex / "TREx"), "--relations", str(trex / "relations.jsonl")])
    with oxigraph_server(store) as url:
        yield subset, url


@pytest.fixture(scope="module")
def recipe(served, shared_data, tmp_path_factory) -> Path:
    wikidata = (f'store = "{served[0].as_posix()}"\nbatch_size = 40\n'
                "http_timeout = 0.5\nhttp_attempts = 3\nhttp_backoff = 0.05")
    return lama_check_recipe(tmp_path_factory.mktemp("recipe") / "mini.toml", shared_data, ["P19", "P101"], 120, wikidata)


def build(recipe: Path, out: Path, cache: Path, endpoint: str):
    return run_recipe(load_recipe(recipe), out, options={"sparql_endpoint": endpoint}, cache_dir=cache)


def outputs(out: Path) -> list[pl.DataFrame]:
    stages = out / ".kbench" / "stages"
    return [pl.read_parquet(stages / "02_single_answer" / "output.parquet"),
            pl.read_parquet(out / "rejected" / "verify_wikidata.parquet"),
            pl.read_parquet(out / "rejected" / "single_answer.parquet")]


def assert_cache_sound(cache: Path) -> int:
    """Every cache entry is complete and matches its checksum; returns how many there are."""
    files = list((cache / "sparql").rglob("*"))
    entries = [p for p in files if p.suffix == ".json"]
    assert not [p for p in files if p.is_file() and p.suffix != ".json"]  # no half-written temporaries
    for path in entries:
        entry = json.loads(path.read_text())
        assert entry["rows_sha256"] == stable_hash(entry["rows"]), path
    return len(entries)


@pytest.fixture(scope="module")
def reference(served, recipe, tmp_path_factory):
    work = tmp_path_factory.mktemp("reference")
    build(recipe, work / "out", work / "cache", served[1])
    frames = outputs(work / "out")
    assert frames[0].height > 0
    return frames


def test_every_fault_is_retried_and_the_dataset_is_identical(served, recipe, reference, tmp_path):
    with FaultProxy(served[1], ALL_FAULTS, hang_seconds=1.5) as proxy:
        build(recipe, tmp_path / "out", tmp_path / "cache", proxy.url)
        assert proxy.script == []  # every fault was served
    for expected, got in zip(reference, outputs(tmp_path / "out")):
        assert got.equals(expected)
    assert assert_cache_sound(tmp_path / "cache") > 0


def test_persistent_failure_stops_then_a_rerun_finishes_without_repeating_queries(served, recipe, reference, tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    with FaultProxy(served[1], ["pass", "pass"] + ["503"] * 50) as proxy:
        with pytest.raises(UserError, match=r"failed 3 times in a row \(last: HTTP 503\)"):
            build(recipe, out, cache, proxy.url)
        stages = out / ".kbench" / "stages"
        assert (stages / "00_load_lama" / "done.json").exists()
        assert not (stages / "01_verify_wikidata" / "done.json").exists()
        assert assert_cache_sound(cache) == 2  # the two answered queries, nothing from the failures

        proxy.script = []  # the endpoint recovers (same URL, so the cache applies)
        sent = sparql_client.SESSION_STATS.queries_sent
        hits = sparql_client.SESSION_STATS.cache_hits
        build(recipe, out, cache, proxy.url)
        assert sparql_client.SESSION_STATS.cache_hits - hits == 2
        assert sparql_client.SESSION_STATS.queries_sent - sent == assert_cache_sound(cache) - 2
    for expected, got in zip(reference, outputs(out)):
        assert got.equals(expected)


def test_cli_reports_the_failure_in_one_line(served, recipe, tmp_path):
    with FaultProxy(served[1], ["html"] * 50) as proxy:
        done = run_kbench("build", str(recipe), "--out", str(tmp_path / "out"), "--sparql-endpoint", proxy.url,
                          env={"KBENCH_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "failed 3 times in a row (last: HTTP 200 with an invalid body" in done.stderr
