"""The SPARQL client on the embedded store: batching, the query cache, corrupt entries, counters."""

from __future__ import annotations

import json

import pytest
from pyoxigraph import Literal, NamedNode, Quad, Store

from kbench.sources.sparql_cache import CacheWarning, QueryCache
from kbench.sources.sparql_client import EmbeddedTransport, SparqlClient
from kbench.sources.wikidata import DIRECT, ENTITY, RDFS, WikidataClient, entities_query


def _store(n_entities: int) -> Store:
    """Q1..Qn labelled "e<i>"; Qi has i % 3 distinct P19 values (Q1000001, Q1000002)."""
    store = Store()
    label, p19 = NamedNode(f"{RDFS}label"), NamedNode(f"{DIRECT}P19")
    store.add(Quad(NamedNode(f"{ENTITY}P19"), label, Literal("place of birth", language="en")))
    for i in range(1, n_entities + 1):
        node = NamedNode(f"{ENTITY}Q{i}")
        store.add(Quad(node, label, Literal(f"e{i}", language="en")))
        for k in range(i % 3):
            store.add(Quad(node, p19, NamedNode(f"{ENTITY}Q{1000001 + k}")))
    return store


def test_entities_batched_at_most_200_ids_per_query():
    client = SparqlClient(EmbeddedTransport(_store(450), "s"))
    wikidata = WikidataClient(client)
    ids = [f"Q{i}" for i in range(1, 451)] + ["Q999999", "P19"]  # 452 distinct ids
    found = wikidata.entities(ids + ids)  # duplicates are looked up once
    assert client.stats.queries_sent == 3  # ceil(452 / 200)
    assert len(found) == 451 and "Q999999" not in found
    assert found["Q7"] == "e7" and found["P19"] == "place of birth"


def test_object_counts_share_batches_across_relations():
    client = SparqlClient(EmbeddedTransport(_store(30), "s"))
    pairs = [("P19", f"Q{i}") for i in range(1, 31)] + [("P19", "Q555"), ("P20", "Q4"), ("P20", "Q5")]
    counts = WikidataClient(client, batch_size=7).object_counts(pairs + pairs[:5])
    assert client.stats.queries_sent == 5  # ceil(33 distinct pairs / 7), relations mixed in a batch
    assert counts[("P19", "Q3")] == 0 and counts[("P19", "Q4")] == 1 and counts[("P19", "Q5")] == 2
    assert counts[("P19", "Q555")] == 0 and counts[("P20", "Q5")] == 0 and len(counts) == 33
    with pytest.raises(ValueError):
        WikidataClient(client, batch_size=0)
    with pytest.raises(ValueError):
        WikidataClient(client).object_counts([("Q19", "Q1")])  # a relation must be a property


def test_cache_hit_sends_no_query(tmp_path):
    cache = QueryCache(tmp_path)
    first = SparqlClient(EmbeddedTransport(_store(10), "store-a"), cache)
    expected = WikidataClient(first).entities([f"Q{i}" for i in range(1, 11)])
    assert first.stats.queries_sent == 1 and first.stats.cache_hits == 0

    # a store that would answer differently: the cached answer is returned, nothing is sent
    second = SparqlClient(EmbeddedTransport(Store(), "store-a"), cache)
    assert WikidataClient(second).entities([f"Q{i}" for i in range(1, 11)]) == expected
    assert second.stats.queries_sent == 0 and second.stats.cache_hits == 1

    # another endpoint identity is another cache key
    third = SparqlClient(EmbeddedTransport(Store(), "store-b"), cache)
    assert WikidataClient(third).entities(["Q1"]) == {}
    assert third.stats.queries_sent == 1


@pytest.mark.parametrize("damage", ["truncate", "edit_rows", "swap_query", "not_json"])
def test_corrupt_cache_entry_is_warned_about_and_recomputed(tmp_path, damage):
    cache = QueryCache(tmp_path)
    query = entities_query(["Q1", "Q2"])
    good = SparqlClient(EmbeddedTransport(_store(2), "s"), cache).select(query)
    path = cache.path("s", query)
    entry = json.loads(path.read_text())
    if damage == "truncate":
        path.write_text(path.read_text()[:40])
    elif damage == "edit_rows":
        entry["rows"][0]["label"] = "tampered"
        path.write_text(json.dumps(entry))
    elif damage == "swap_query":
        entry["query"] = entities_query(["Q3"])
        path.write_text(json.dumps(entry))
    else:
        path.write_bytes(b"\x80\x04pickle?")

    client = SparqlClient(EmbeddedTransport(_store(2), "s"), cache)
    with pytest.warns(CacheWarning, match="corrupt"):
        assert client.select(query) == good
    assert client.stats.queries_sent == 1 and client.stats.cache_hits == 0
    # the recomputed entry replaced the damaged one and is trusted again
    again = SparqlClient(EmbeddedTransport(Store(), "s"), cache)
    assert again.select(query) == good and again.stats.cache_hits == 1


def test_cache_files_are_json_with_their_own_checksum(tmp_path):
    cache = QueryCache(tmp_path)
    SparqlClient(EmbeddedTransport(_store(1), "s"), cache).select(entities_query(["Q1"]))
    (entry_path,) = list(tmp_path.rglob("*.json"))
    entry = json.loads(entry_path.read_text())
    assert set(entry) == {"version", "endpoint", "query", "rows", "rows_sha256"}
    assert entry_path.stem == QueryCache.key("s", entry["query"])
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".json"]  # no temp files left
