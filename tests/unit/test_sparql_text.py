"""Wikidata ids are validated and no free text enters a query, so no input can change a query's structure;
hostile labels come back as data."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyoxigraph import Literal, NamedNode, Quad, Store

from kbench.sources.sparql_client import EmbeddedTransport, SparqlClient
from kbench.sources.wikidata import (
    ENTITY, RDFS, WikidataClient, entities_query, is_valid_id, object_count_query, validate_id,
)

INJECTION = 'x" } ; DELETE WHERE { ?s ?p ?o } #'


@pytest.mark.parametrize("good", ["Q1", "Q42", "P19", "Q123456789012"])
def test_valid_ids(good):
    assert is_valid_id(good) and validate_id(good) == good


@pytest.mark.parametrize("bad", [
    "", "Q", "Q0", "Q01", "q42", "L1", "Q42 ", " Q42", "Q42\n", "Q4\n2", 'Q1"', "Q1>", "Q1}", "Q1 }",
    "Q1\\", "Q1\u0663", "Q１", "Q1😀", "wd:Q1", "<Q1>", "Q1.", "Q-1", None, 42, b"Q1",
])
def test_invalid_ids_are_rejected(bad):
    assert not is_valid_id(bad)
    with pytest.raises(ValueError):
        validate_id(bad)


def test_query_builders_refuse_invalid_ids():
    with pytest.raises(ValueError):
        entities_query(["Q1", "Q2 } ; DELETE WHERE { ?s ?p ?o } #"])
    with pytest.raises(ValueError):
        object_count_query([("P19>", "Q1")])
    with pytest.raises(ValueError):
        object_count_query([("P19", "Q1\n")])


def _store_with_labels(labels: list[str]) -> Store:
    store = Store()
    for i, label in enumerate(labels, start=1):
        store.add(Quad(NamedNode(f"{ENTITY}Q{i}"), NamedNode(f"{RDFS}label"), Literal(label, language="en")))
    return store


def _client(store: Store) -> SparqlClient:
    return SparqlClient(EmbeddedTransport(store, identity="test-store"))


def test_injection_label_round_trips_as_data():
    store = _store_with_labels([INJECTION, "other"])
    client = _client(store)
    assert WikidataClient(client).entities(["Q1", "Q2"]) == {"Q1": INJECTION, "Q2": "other"}
    assert len(store) == 2  # the store is untouched: the "DELETE" was data, not an update


HOSTILE = st.text(alphabet=st.sampled_from(list('"\\\n\r\t\b\f{}<>#;?.\'') + ["a", " ", "😀", "𝔘", "é", "\u2028"]),
                  min_size=0, max_size=30)


@settings(max_examples=60, deadline=None)
@given(label=HOSTILE)
def test_any_label_round_trips_as_data(label):
    store = _store_with_labels([label, label + "!"])
    assert WikidataClient(_client(store)).entities(["Q1", "Q2"]) == {"Q1": label, "Q2": label + "!"}
