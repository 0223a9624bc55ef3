"""load_annotated_triplets: REBEL-format annotations -> one row per triple with spans."""

from __future__ import annotations

import json

import polars as pl

from kbench.construct.context import StageContext
from kbench.construct.stage import stage_registry

TEXT = "Trinity Peninsula is in Graham Land. It was mapped in 1913."


def _ent(uri, text, surface):
    start = text.index(surface)
    return {"uri": uri, "boundaries": [start, start + len(surface)], "surfaceform": surface}


def _docs():
    triples = [
        {"subject": _ent("Q2038835", TEXT, "Trinity Peninsula"), "predicate": {"uri": "P361", "surfaceform": "part of"},
         "object": _ent("Q618370", TEXT, "Graham Land")},
        {"subject": _ent("Q2038835", TEXT, "Trinity Peninsula"), "predicate": {"uri": "P585", "surfaceform": "point in time"},
         "object": _ent("1913-01-01T00:00:00Z^^xsd:dateTime", TEXT, "1913")},
    ]
    triples.append(dict(triples[0]))  # annotated twice
    return pl.DataFrame([
        {"doc_id": "1", "title": "Trinity Peninsula", "uri": "Q2038835", "text": TEXT, "extra_json": json.dumps({"triples": triples})},
        {"doc_id": "2", "title": "Empty", "uri": None, "text": "No triples.", "extra_json": "{}"},
    ]).lazy()


def test_rows_per_triple_with_sentence_and_spans(tmp_path):
    cls = stage_registry()["load_annotated_triplets"]
    assert cls.preserves_rows is False
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path, seed=0)
    out = cls(cls.Params(), ctx).run(_docs())
    rows = out.kept.to_dicts()
    assert len(rows) == 2 and out.rejected["reason"].to_list() == ["duplicate_triple"]
    first, second = rows
    assert (first["subject"], first["subject_id"], first["relation"], first["relation_label"], first["object"],
            first["object_id"], first["object_kind"]) == ("Trinity Peninsula", "Q2038835", "P361", "part of",
                                                          "Graham Land", "Q618370", "entity")
    assert first["sentence"] == "Trinity Peninsula is in Graham Land." and first["sentence_index"] == 0
    assert TEXT[first["object_start"]:first["object_end"]] == "Graham Land"
    # the date is a literal: no Q-id; the sentence is found by the subject's offset
    assert second["object_id"] is None and second["object_kind"] == "literal" and second["sentence_index"] == 0
    assert first["triplet_id"] != second["triplet_id"] and len(first["triplet_id"]) == 16
