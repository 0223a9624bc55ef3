"""Masked LMs with byte-level BPE (RoBERTa, ModernBERT): the gold is the token the model predicts
AT the mask, with the space marker ("ĠParis"), not the bare word ("Paris"). WordPiece (BERT) keeps
working with the same prompts."""

from __future__ import annotations

import pytest

import kbench
from kbench.tasks.extraction.task import lama_filter
from kbench.evaluate.prompts import build_probes
from kbench.models.loading import load_model
from kbench.models.runner import ModelRunner
from tests.dataset_folders import question_dataset
from tests.question_rows import question_row

ROWS = [question_row(id="q0", relation="P36", subject="France", object="Paris", prompt_masked="The capital of France is [MASK] ."),
        question_row(id="q1", relation="P19", subject="Dante", object="Florence", prompt_masked="Dante was born in [MASK] ."),
        question_row(id="q2", relation="P495", subject="Toyota", object="Japan", prompt_masked="Toyota is a company from [MASK] .")]


@pytest.fixture(scope="module")
def roberta(tiny_roberta_dir):
    return load_model(str(tiny_roberta_dir))


def test_the_gold_is_the_space_marked_token(roberta):
    tok = roberta.tokenizer
    assert tok.convert_tokens_to_ids("ĠParis") != tok.unk_token_id, "the tiny vocabulary must hold ĠParis"
    prompt = build_probes(ROWS[:1], "cloze", "masked")[0]
    assert prompt.gold == " Paris"
    (ids, position, gold_id) = ModelRunner(roberta).encoder.rank_items([prompt.prompt.text], [prompt.gold])[0]
    assert gold_id == tok.convert_tokens_to_ids("ĠParis") != tok.convert_tokens_to_ids("Paris")
    assert ids[position] == tok.mask_token_id


def test_rank_is_read_at_the_mask_for_the_marked_token(roberta):
    import torch

    tok = roberta.tokenizer
    prompt = build_probes(ROWS[:1], "cloze", "masked")[0]
    (rank, logprob), = ModelRunner(roberta).rank_first_token([prompt.prompt], [prompt.gold])
    encoded = tok(prompt.prompt.text.replace("[MASK]", tok.mask_token), return_tensors="pt")
    with torch.no_grad():
        logits = roberta.model(**encoded).logits[0]
    at_mask = logits[encoded["input_ids"][0].tolist().index(tok.mask_token_id)]
    gold = tok.convert_tokens_to_ids("ĠParis")
    assert rank == 1 + int((at_mask > at_mask[gold]).sum())
    assert logprob == pytest.approx(float(torch.log_softmax(at_mask, -1)[gold]), abs=1e-5)


def test_single_token_filter_and_candidates_use_the_marked_form(roberta, tmp_path):
    tok = roberta.tokenizer
    prompts = build_probes(ROWS, "cloze", "masked")
    vocab = tmp_path / "common_vocab.txt"
    vocab.write_text("Paris\nFlorence\nJapan\nBerlin\n")
    kept, _, drops, candidates, _ = lama_filter(ROWS, prompts, ModelRunner(roberta), str(vocab))
    single = [r["object"] for r in ROWS if len(tok(" " + r["object"], add_special_tokens=False)["input_ids"]) == 1]
    assert [r["object"] for r in kept] == single and drops["multi_token_object"] == len(ROWS) - len(single)
    assert tok.convert_tokens_to_ids("ĠParis") in candidates and tok.convert_tokens_to_ids("ĠBerlin") in candidates


def test_extraction_lama_protocol_runs_on_both_tokenizer_families(roberta, tiny_masked_dir, tmp_path):
    dataset = question_dataset(tmp_path / "ds", ROWS)
    for name, model in (("roberta", roberta), ("bert", load_model(str(tiny_masked_dir)))):
        results = kbench.evaluate("extraction", dataset=dataset, model=ModelRunner(model), out=tmp_path / name, protocol="lama").results
        assert results["headline"]["lama_p_at_1"]["n"] + sum(results["metrics"]["protocol_drops"].values()) == len(ROWS)
