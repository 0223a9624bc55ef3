"""extract_rebel through the real transformers code path with a tiny BART that knows one sentence.

The model is randomly initialised from a config (no hub), with a local word-level tokenizer that
has REBEL's special tokens, and trained for a few steps to emit one REBEL string, so the stage's
batching, decoding, parsing and span mapping all run on real model output.
"""

from __future__ import annotations

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stage import stage_registry

SENTENCE = "Trinity Peninsula is part of Graham Land in Antarctica ."
TARGET = "<triplet> Trinity Peninsula <subj> Graham Land <obj> part of <subj> Antarctica <obj> continent"


@pytest.fixture(scope="module")
def tiny_rebel(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    special = ["<pad>", "<s>", "</s>", "<unk>", "<triplet>", "<subj>", "<obj>"]
    words = sorted((set(SENTENCE.split()) | set(TARGET.split()) | {"It", "is", "cold"}) - set(special))
    vocab = {t: i for i, t in enumerate(special + words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>", additional_special_tokens=["<triplet>", "<subj>", "<obj>"])
    config = BartConfig(vocab_size=len(vocab), d_model=16, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                        max_position_embeddings=48, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                        decoder_start_token_id=2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = BartForConditionalGeneration(config)
    x, y = tokenizer([SENTENCE], return_tensors="pt"), tokenizer([TARGET], return_tensors="pt").input_ids
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    for _ in range(60):
        model(**x, labels=y).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    torch.set_num_threads(threads)
    folder = tmp_path_factory.mktemp("tiny-rebel")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_extracts_triplets_with_spans_and_reuses_cached_parts(tmp_path, tiny_rebel):
    text = f"{SENTENCE} It is cold ."
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
