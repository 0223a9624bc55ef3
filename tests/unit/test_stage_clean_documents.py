"""clean_documents on inline documents: each drop reason counted, extra fields kept as JSON."""

from __future__ import annotations

import json

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stage import stage_registry
from kbench.errors import InputError


def _run(tmp_path, docs_text: str, **params):
    (tmp_path / "docs.jsonl").write_text(docs_text, encoding="utf-8")
    cls = stage_registry()["clean_documents"]
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0)
    stage = cls(cls.Params(path="docs.jsonl", **params), ctx)
    outs = [stage.run(chunk.lazy()) for chunk in stage.source_chunks(2)]  # as the runner does, in 2-document chunks
    return pl.concat([o.kept for o in outs]), pl.concat([o.rejected for o in outs])


def _doc(title, text, **extra):
    return json.dumps({"title": title, "text": text, **extra}) + "\n"


def test_each_reason_is_counted_and_kept_rows_carry_extras(tmp_path):
    words = " ".join(["word"] * 12)
    docs = (_doc("Good", words, uri="Q1", docid="7", triples=[{"x": 1}])
            + _doc("List of rivers", words)
            + _doc("Bullets", "* a b c\n* d e f\nintro line here and more")
            + _doc("Markup", words + " <div class='x'>hi</div>")
            + _doc("Short", "too few words"))
    kept, rejected = _run(tmp_path, docs, min_words=10)
    assert kept["title"].to_list() == ["Good"]
    row = kept.row(0, named=True)
    assert row["doc_id"] == "7" and row["uri"] == "Q1" and row["n_words"] == 12
    assert json.loads(row["extra_json"]) == {"triples": [{"x": 1}]}
    assert dict(zip(rejected["title"], rejected["reason"])) == {
        "List of rivers": "list_article", "Bullets": "list_article", "Markup": "html_artifacts", "Short": "too_short"}


def test_default_threshold_is_100_words(tmp_path):
    docs = _doc("A", " ".join(["w"] * 99)) + _doc("B", " ".join(["w"] * 100))
    kept, rejected = _run(tmp_path, docs)
    assert kept["title"].to_list() == ["B"] and rejected["reason"].to_list() == ["too_short"]


def test_missing_text_names_file_and_line(tmp_path):
    with pytest.raises(InputError, match=r"docs.jsonl:2.*text"):
        _run(tmp_path, _doc("A", "x") + json.dumps({"title": "B"}) + "\n")
