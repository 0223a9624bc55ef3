"""corpus_presence over a real infini-gram index built from an inline corpus."""

from __future__ import annotations

import json
import logging

import polars as pl

from kbench.construct.context import StageContext
from kbench.construct.stage import stage_registry
from kbench.sources.corpus_index import CorpusIndex, build_index

CORPUS = [
    "Paris is the capital of France. Zürich lies in Switzerland.",
    "Berlin is the capital of Germany. Paris again, and Parisian cafés.",
]
ROWS = [
    ("Paris", "France"),        # same document
    ("Paris", "Germany"),       # same document (the second)
    ("Zürich", "Germany"),      # both present, never together
    ("Atlantis", "France"),     # subject absent
    ("Berlin", "Mars"),         # object absent
]


def _corpus(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "docs.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in CORPUS), encoding="utf-8")
    (folder / "notes.md").write_text("not part of the corpus: Atlantis Atlantis", encoding="utf-8")
    return folder


def _run(tmp_path, **params):
    _corpus(tmp_path)
    cls = stage_registry()["corpus_presence"]
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "cache")
    stage = cls(cls.Params(corpus="corpus", **params), ctx)
    assert [p.name for p in stage.input_files()] == ["docs.jsonl"]
    out = stage.run(pl.DataFrame(ROWS, schema=["subject", "object"], orient="row").lazy())
    return out.kept.collect(), out.rejected.collect()


def test_byte_substring_counts_and_cached_index(tmp_path):
    first = build_index(_corpus(tmp_path), tmp_path / "cache")
    assert build_index(tmp_path / "corpus", tmp_path / "cache") == first  # reused, not rebuilt
    index = CorpusIndex(first)
    assert index.count("Paris") == 3  # "Parisian" counts: substring semantics
    assert index.count("Zürich") == 1 and index.count("zürich") == 0 and index.count("") == 0
    assert index.documents_containing("Paris", 10) == ({0, 1}, False)
    assert index.documents_containing("Paris", 1)[1] is True


def test_both_present(tmp_path):
    kept, rejected = _run(tmp_path)
    assert kept.select("subject", "object", "subject_corpus_count", "object_corpus_count").rows() == [
        ("Paris", "France", 3, 1), ("Paris", "Germany", 3, 1), ("Zürich", "Germany", 1, 1)]
    assert rejected["reason"].to_list() == ["subject_not_in_corpus", "object_not_in_corpus"]


def test_same_document(tmp_path):
    kept, rejected = _run(tmp_path, mode="same_document")
    assert kept.select("subject", "object", "cooccurrence_docs").rows() == [("Paris", "France", 1), ("Paris", "Germany", 1)]
    assert rejected["reason"].to_list() == ["no_cooccurrence", "subject_not_in_corpus", "object_not_in_corpus"]


def test_corpus_count_frequency_source(tmp_path):
    from kbench.construct.frequency import make_source

    _corpus(tmp_path)
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "cache")
    source = make_source("corpus_count", {"corpus": "corpus", "entity": "object"}, ctx)
    assert [p.name for p in source.input_files()] == ["docs.jsonl"]
    table = pl.LazyFrame({"object": ["France", "Paris", "Mars", None]})
    assert source.frequency(table).collect()["frequency"].to_list() == [1.0, 3.0, 0.0, None]


def test_counting_shows_progress_with_an_eta_in_the_log(tmp_path, caplog, monkeypatch):
    """Not on a terminal, a long stage's progress goes to the log: start, end (and every 10 s between)."""
    monkeypatch.setattr(logging.getLogger("kbench"), "propagate", True)  # the CLI's configure() turns it off
    with caplog.at_level(logging.INFO, logger="kbench.progress"):
        _run(tmp_path)
    lines = [r.getMessage() for r in caplog.records if r.name == "kbench.progress"]
    assert lines[0] == "corpus counts: 0/7 names" and lines[-1].startswith("corpus counts: 7/7 names in ")
