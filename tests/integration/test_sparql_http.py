"""The same SPARQL code against a real HTTP endpoint: `oxigraph serve-read-only` on 127.0.0.1.

The store is built from the real LAMA inputs with the real CLI (`kbench wikidata subset` then
`kbench wikidata import`), served by the `oxigraph` binary from the PyPI package `oxigraph`
(installed by the `test` extra), started here with subprocess.Popen and stopped by its pid.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stages.single_answer import SingleAnswer
from kbench.construct.stages.verify_wikidata import VerifyWikidata
from kbench.sources import sparql_client
from kbench.sources.sparql_client import EmbeddedTransport, HttpTransport, SparqlClient
from kbench.sources.wikidata import ENTITY, WikidataClient
from kbench.sources.wikidata_store import open_cached_store

from conftest import run_kbench
from sparql_servers import lama_check_recipe, make_lama_store, oxigraph_server

INJECTION = 'x" } ; DELETE WHERE { ?s ?p ?o } #'
EXTRA = f'<{ENTITY}Q999999999991> <http://www.w3.org/2000/01/rdf-schema#label> "x\\" }} ; DELETE WHERE {{ ?s ?p ?o }} #"@en .\n'


@pytest.fixture(scope="module")
def lama_store(shared_data, tmp_path_factory) -> tuple[Path, Path]:
    """(subset .nt, store folder) for the real LAMA inputs, made with the CLI."""
    return make_lama_store(tmp_path_factory.mktemp("wikidata"), ["--lama-dir", str(shared_data)], extra_nt=EXTRA)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    """One kbench cache for the module, so the embedded store is built once."""
    return tmp_path_factory.mktemp("kbench-cache")


@pytest.fixture(scope="module")
def endpoint(lama_store):
    with oxigraph_server(lama_store[1]) as url:
        yield url


@pytest.fixture(scope="module")
def p19_facts(shared_data) -> pl.DataFrame:
    rows = pl.read_ndjson(shared_data / "lama_trex" / "TREx" / "P19.jsonl").head(450)
    return rows.select(pl.col("uuid").alias("id"), pl.lit("P19").alias("relation"),
                       pl.col("sub_uri").alias("subject_id"), pl.col("sub_label").alias("subject"),
                       pl.col("obj_uri").alias("object_id"), pl.col("obj_label").alias("object"))


def test_http_and_embedded_give_the_same_answers(endpoint, lama_store, p19_facts, cache_dir):
    ids = p19_facts["subject_id"].to_list() + p19_facts["object_id"].to_list() + ["P19", "Q999999999", "Q999999999991"]
    store, identity = open_cached_store(lama_store[0], cache_dir)
    embedded = WikidataClient(SparqlClient(EmbeddedTransport(store, identity)))
    http = WikidataClient(SparqlClient(HttpTransport(endpoint)))
    found = http.entities(ids)
    assert found == {k: v for k, v in embedded.entities(ids).items() if k != "Q999999999991"} | {"Q999999999991": INJECTION}
    assert "Q999999999" not in found and found["P19"] == "place of birth"
    assert http.sparql.stats.queries_sent == math.ceil(len(set(ids)) / 200)

    pairs = [("P19", s) for s in p19_facts["subject_id"].to_list()] + [("P20", "Q1886736")]
    assert http.object_counts(pairs) == embedded.object_counts(pairs)


def test_injection_label_round_trips_over_http(endpoint):
    client = SparqlClient(HttpTransport(endpoint))  # the entities query the build's verify stage sends
    assert WikidataClient(client).entities(["Q999999999991", "Q999999999"]) == {"Q999999999991": INJECTION}


def test_stages_over_http_match_embedded_and_cache_results(endpoint, lama_store, p19_facts, cache_dir, tmp_path):
    def run(options: dict):
        ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=cache_dir,
                           options=options)
        verified = VerifyWikidata(VerifyWikidata.Params(store=str(lama_store[0])), ctx).run(p19_facts.lazy())
        single = SingleAnswer(SingleAnswer.Params(store=str(lama_store[0])), ctx).run(verified.kept)
        return [frame.collect().sort("id") for frame in (verified.rejected, single.kept, single.rejected)]

    embedded = run({})
    assert not (cache_dir / "sparql").exists()  # the embedded store's answers are not cached
    over_http = run({"sparql_endpoint": endpoint})
    for a, b in zip(embedded, over_http):
        assert a.equals(b)
    assert over_http[1].height > 0

    assert list((cache_dir / "sparql").rglob("*.json"))
    # a rerun is answered from the cache (keyed by endpoint and query text): nothing is sent
    sent_before = sparql_client.SESSION_STATS.queries_sent
    again = run({"sparql_endpoint": endpoint})
    assert sparql_client.SESSION_STATS.queries_sent == sent_before
    for a, b in zip(over_http, again):
        assert a.equals(b)


def test_build_with_sparql_endpoint_flag(endpoint, lama_store, shared_data, cache_dir, tmp_path):
    recipe = lama_check_recipe(tmp_path / "mini.toml", shared_data, ["P19", "P101"], 40,
                               f'store = "{lama_store[0].as_posix()}"')
    out, outputs = tmp_path / "out", []
    for extra in ([], ["--sparql-endpoint", endpoint]):
        done = run_kbench("build", str(recipe), "--out", str(out), *extra, env={"KBENCH_CACHE": str(cache_dir)})
        assert done.returncode == 0, done.stderr
        outputs.append(pl.read_parquet(out / ".kbench" / "stages" / "02_single_answer" / "output.parquet"))
    assert outputs[0].equals(outputs[1]) and outputs[0].height > 0
    # the endpoint joins the resume key of the Wikidata stages only: they ran again, load_lama did not
    events = [json.loads(line) for line in (out / ".kbench" / "events.jsonl").read_text().splitlines()]
    assert [(e["stage"], e["action"]) for e in events[-3:]] == [
        ("load_lama", "reused"), ("verify_wikidata", "computed"), ("single_answer", "computed")]
    # the protocol block says the checks ran against an endpoint that is not Wikidata (an import is Wikidata)
    ids = [d["id"] for d in json.loads((out / "manifest.json").read_text())["protocol"]["deviations"]]
    assert ids == ["google-re-not-loaded", "lama-relations-subset", "lama-rows-limited",
                   "existence-endpoint-not-wikidata", "single-answer-endpoint-not-wikidata"]

    done = run_kbench("build", str(recipe), "--out", str(tmp_path / "down"), "--sparql-endpoint", "http://127.0.0.1:9/q",
                      "--set", "verify_wikidata.http_attempts=2", env={"KBENCH_CACHE": str(cache_dir)})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "http://127.0.0.1:9/q failed 2 times" in done.stderr
