"""extract_rebel through the real transformers code path with a tiny BART that knows one sentence.

The model (`tiny_rebel`, tests/fixtures_models.py) is randomly initialised from a config (no hub), with a
local word-level tokenizer that has REBEL's special tokens, and trained for a few steps to emit one REBEL
string, so the stage's batching, decoding, parsing and span mapping all run on real model output.
"""

from __future__ import annotations

import polars as pl

from kbench.construct.context import StageContext
from kbench.construct.stage import stage_registry
from tests.fixtures_models import REBEL_SENTENCE


def test_extracts_triplets_with_spans_and_reuses_cached_parts(tmp_path, tiny_rebel):
    text = f"{REBEL_SENTENCE} It is cold ."
    docs = pl.DataFrame([{"doc_id": "1", "title": "Trinity Peninsula", "uri": "Q2038835", "text": text},
                         {"doc_id": "2", "title": "Empty", "uri": None, "text": ""}]).lazy()
    cls = stage_registry()["extract_rebel"]
    assert cls.preserves_rows is False
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "cache")
    stage = cls(cls.Params(model=str(tiny_rebel), batch_size=2, num_beams=1, max_new_tokens=24, docs_per_part=1), ctx)
    assert any(p.name == "config.json" for p in stage.input_files())
    kept = stage.run(docs).kept
    first = kept.filter(pl.col("sentence_index") == 0)
    assert first.select("subject", "relation_label", "object").rows() == [
        ("Trinity Peninsula", "part of", "Graham Land"), ("Trinity Peninsula", "continent", "Antarctica")]
    assert all(text[r["subject_start"]:r["subject_end"]] == r["subject"] and
               text[r["object_start"]:r["object_end"]] == r["object"] for r in first.to_dicts())
    assert set(first["origin"]) == {"rebel"} and first["subject_id"].null_count() == 2
    # whatever the tiny model says about the second sentence, names it does not contain get no offsets
    second = kept.filter(pl.col("sentence_index") == 1)
    assert second["subject_start"].null_count() == second.height
    parts = sorted((tmp_path / "cache" / "rebel").glob("*.parquet"))
    assert len(parts) == 2
    stamps = [p.stat().st_mtime_ns for p in parts]
    again = cls(stage.params, ctx).run(docs).kept
    assert again.equals(kept) and [p.stat().st_mtime_ns for p in parts] == stamps
