"""Wikidata ids are validated and string literals escaped, so no input can change a query's structure."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyoxigraph import Literal, NamedNode, Quad, Store

from kbench.sources.sparql_client import EmbeddedTransport, SparqlClient
from kbench.sources.wikidata import (
    ENTITY, RDFS, WikidataClient, entities_query, is_valid_id, label_lookup_query, object_count_query,
    sparql_literal, validate_id,
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


@pytest.mark.parametrize("text, expected", [
    ("plain", '"plain"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("back\\slash", '"back\\\\slash"'),
    ("line\nbreak\r\ttab", '"line\\nbreak\\r\\ttab"'),
    ("emoji 😀 𝔘", '"emoji 😀 𝔘"'),
])
def test_literal_escaping(text, expected):
    assert sparql_literal(text) == expected


def test_literal_language_tag_is_checked_and_surrogates_refused():
    assert sparql_literal("x", "en") == '"x"@en'
    with pytest.raises(ValueError):
        sparql_literal("x", 'en" . }')
    with pytest.raises(ValueError):
        sparql_literal("lone \ud800 surrogate")


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
    rows = client.select(label_lookup_query(INJECTION))
    assert rows == [{"item": f"{ENTITY}Q1"}]
    # the store is untouched: the "DELETE" was data, not an update
    assert len(store) == 2
    assert WikidataClient(client).entities(["Q1", "Q2"]) == {"Q1": INJECTION, "Q2": "other"}


HOSTILE = st.text(alphabet=st.sampled_from(list('"\\\n\r\t\b\f{}<>#;?.\'') + ["a", " ", "😀", "𝔘", "é", "\u2028"]),
                  min_size=0, max_size=30)


@settings(max_examples=60, deadline=None)
@given(label=HOSTILE)
def test_any_label_round_trips_as_data(label):
    store = _store_with_labels([label, label + "!"])
    assert _client(store).select(label_lookup_query(label)) == [{"item": f"{ENTITY}Q1"}]
