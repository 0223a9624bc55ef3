"""triplets_to_facts and the document_mentions frequency source on inline data."""

from __future__ import annotations

import json

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stage import stage_registry
from kbench.errors import InputError
from kbench.construct.frequency import make_source


def _ctx(tmp_path):
    return StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "c")


def test_templates_from_file_or_generic(tmp_path):
    (tmp_path / "rel.jsonl").write_text(json.dumps({"relation": "P30", "template": "[X] is located in [Y] ."}) + "\n")
    cls = stage_registry()["triplets_to_facts"]
    rows = pl.DataFrame({"triplet_id": ["a", "b"], "relation": ["P30", "P361"], "relation_label": ["continent", "part of"],
                         "origin": ["annotated", "rebel"]}).lazy()
    out = cls(cls.Params(templates="rel.jsonl"), _ctx(tmp_path)).run(rows).kept.collect()
    assert out.select("id", "template", "source").rows() == [
        ("a", "[X] is located in [Y] .", "rebel_annotated"), ("b", "The part of of [X] is [Y] .", "rebel_rebel")]
    (tmp_path / "bad.jsonl").write_text(json.dumps({"relation": "P1", "template": "no slots"}) + "\n")
    with pytest.raises(InputError, match=r"bad.jsonl:1"):
        cls(cls.Params(templates="bad.jsonl"), _ctx(tmp_path)).run(rows)


def test_document_mentions_counts_annotated_mentions(tmp_path):
    docs = [{"title": "A", "text": "", "entities": [{"uri": "Q1"}, {"uri": "Q2"}, {"uri": "Q1"}]},
            {"title": "B", "text": "", "entities": [{"uri": "Q1"}]}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    source = make_source("document_mentions", {"documents": "d.jsonl"}, _ctx(tmp_path))
    table = pl.LazyFrame({"subject_id": ["Q2", "Q1", "Q9", None]})
    assert source.frequency(table).collect()["frequency"].to_list() == [1.0, 3.0, 0.0, 0.0]
