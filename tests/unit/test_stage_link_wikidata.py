"""link_wikidata on inline triplets and a tiny REBEL-format document file, outcomes by hand."""

from __future__ import annotations

import json

import polars as pl

from kbench.construct.context import StageContext
from kbench.construct.stage import stage_registry

DOCS = [
    {"title": "Graham Land", "uri": "Q618370", "text": "...",
     "entities": [{"uri": "Q51", "surfaceform": "Antarctica"}, {"uri": "Q90", "surfaceform": "Paris"},
                  {"uri": "Q167646", "surfaceform": "Paris"}, {"uri": "Q2", "surfaceform": "Springfield"},
                  {"uri": "Q3", "surfaceform": "springfield"}],
     "triples": [{"predicate": {"uri": "P30", "surfaceform": "continent"}}]},
    {"title": "Paris", "uri": "Q90", "text": "..."},
]


def _row(subject, relation_label, obj, subject_id=None, object_id=None, relation=None, kind="entity"):
    return {"subject": subject, "subject_id": subject_id, "relation": relation, "relation_label": relation_label,
            "object": obj, "object_id": object_id, "object_kind": kind}


def _run(tmp_path, rows, **params):
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    (tmp_path / "props.tsv").write_text("pid\tlabel\nP17\tcountry\nP30\tcontinent of\n", encoding="utf-8")
    cls = stage_registry()["link_wikidata"]
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "cache")
    stage = cls(cls.Params(documents="docs.jsonl", property_table="props.tsv", **params), ctx)
    assert {"docs.jsonl", "props.tsv"} <= {p.name for p in stage.input_files()}
    out = stage.run(pl.DataFrame(rows, schema_overrides={"subject_id": pl.String, "object_id": pl.String,
                                                         "relation": pl.String}).lazy())
    return out.kept.collect(), out.rejected.collect()


def test_links_by_normalised_name_and_rejects_with_reasons(tmp_path):
    rows = [
        _row("graham_land ", "Continent", "ANTARCTICA"),                      # all three by index
        _row("Graham Land", "country", "Antarctica", subject_id="Q618370"),   # relation from the table
        _row("Graham Land", "point in time", "1913", kind="literal"),
        _row("Graham Land", "continent", "Atlantis"),
        _row("Springfield", "continent", "Antarctica"),
        _row("Graham Land", "sibling", "Antarctica"),
        _row("Graham Land", "continent", "Antarctica", object_id="Q5'"),
        _row("Paris", "continent", "Paris"),                                   # title wins: Q90 twice vs Q167646 once
    ]
    kept, rejected = _run(tmp_path, rows)
    assert kept.select("subject_id", "relation", "object_id", "link_method").rows() == [
        ("Q618370", "P30", "Q51", "index"), ("Q618370", "P17", "Q51", "index")]
    assert rejected["reason"].to_list() == ["object_is_literal", "object_unlinked", "subject_ambiguous",
                                            "relation_unlinked", "invalid_id", "self_loop"]


def test_existing_ids_kept_or_replaced(tmp_path):
    row = _row("Antarctica", "continent", "Antarctica", subject_id="Q618370", object_id="Q51", relation="P30")
    kept, _ = _run(tmp_path, [row])
    assert kept.select("subject_id", "link_method").rows() == [("Q618370", "annotated")]
    kept, rejected = _run(tmp_path, [row], keep_existing_ids=False)
    assert kept.height == 0 and rejected["reason"].to_list() == ["self_loop"]


def test_titles_table_wins_over_document_annotations(tmp_path):
    (tmp_path / "titles.tsv").write_text("title\tqid\nParis_(Texas)\tQ830149\nParis\tQ167646\n", encoding="utf-8")
    row = _row("Paris", "continent", "Antarctica")
    kept, _ = _run(tmp_path, [row, _row("paris (texas)", "continent", "Antarctica")], titles_table="titles.tsv")
    assert kept["subject_id"].to_list() == ["Q167646", "Q830149"]
