"""The Wikidata-shaped subset written from REBEL-format documents, queried through a real store."""

from __future__ import annotations

import json

from kbench.sources.rebel_subset import write_rebel_subset


def _ent(uri, surface):
    return {"uri": uri, "surfaceform": surface}


def test_subset_holds_claims_labels_aliases_and_properties(tmp_path):
    pyoxigraph = __import__("pyoxigraph")
    docs = [
        {"title": "Graham Land", "uri": "Q618370", "text": "",
         "entities": [_ent("Q51", "Antarctica"), _ent("Q51", "Antarctic"), _ent("Q51", "Antarctica")],
         "triples": [{"subject": _ent("Q618370", "Graham Land"), "predicate": {"uri": "P30", "surfaceform": "continent"},
                      "object": _ent("Q51", "Antarctica")},
                     {"subject": _ent("Q618370", "Graham Land"), "predicate": {"uri": "P585", "surfaceform": "point in time"},
                      "object": {"uri": "1913-01-01T00:00:00Z^^http://www.w3.org/2001/XMLSchema#dateTime", "surfaceform": "1913"}}]},
    ]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    counts = write_rebel_subset(tmp_path / "d.jsonl", tmp_path / "s.nt")
    assert counts == {"triples": counts["triples"], "entities": 2, "properties": 2}
    text = (tmp_path / "s.nt").read_text(encoding="utf-8")
    assert text == "".join(sorted(set(text.splitlines(keepends=True))))  # sorted, deduplicated
    store = pyoxigraph.Store()
    store.load(path=str(tmp_path / "s.nt"), format=pyoxigraph.RdfFormat.N_TRIPLES)
    ask = lambda q: {tuple(str(v) for v in row) for row in store.query(  # noqa: E731
        "PREFIX wd: <http://www.wikidata.org/entity/> PREFIX wdt: <http://www.wikidata.org/prop/direct/> "
        "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> PREFIX skos: <http://www.w3.org/2004/02/skos/core#> " + q)}
    assert ask("SELECT ?o WHERE { wd:Q618370 wdt:P30 ?o }") == {("<http://www.wikidata.org/entity/Q51>",)}
    assert ask("SELECT ?o WHERE { wd:Q618370 wdt:P585 ?o }") == set()  # literal objects are left out
    assert ask("SELECT ?l WHERE { wd:Q51 rdfs:label ?l }") == {('"Antarctica"@en',)}
    assert ask("SELECT ?l WHERE { wd:Q51 skos:altLabel ?l }") == {('"Antarctic"@en',)}
    assert ask("SELECT ?l WHERE { wd:Q618370 rdfs:label ?l }") == {('"Graham Land"@en',)}
    assert ask("SELECT ?l WHERE { wd:P585 rdfs:label ?l }") == {('"point in time"@en',)}
