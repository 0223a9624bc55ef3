"""A judge's "no" drops the row and its "yes" keeps it (judge_domain, judge_single_answer), with a
real tiny model whose verdict is forced, in-process (plain prompt) and behind the vLLM-like
stand-in's /v1/chat/completions (the served chat form); the protocol entry and the card name the
judge, its backend and its prompt form."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stages.judge_domain import JudgeDomain
from kbench.construct.stages.judge_single_answer import JudgeSingleAnswer
from tests.fixtures_models import CORPUS
from tests.servers import free_port, vllm_like
from tests.servers.fixtures import CHAT_TEMPLATE

ROWS = pl.DataFrame({
    "subject": ["Allan Peiper", "Mont Blanc", "BRCA1"],
    "relation_label": ["place of birth", "country", "found in taxon"],
    "object": ["Alexandra", "France", "Homo sapiens"],
    "domain": ["sports", "geography", "science"],
})


def build_forced_judge(folder: Path, word: str) -> Path:
    """A 2-layer Llama that answers `word` to every prompt: the last MLP's bias swamps the residual
    stream with one direction, and only `word`'s row of the output head reads it."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|pad|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator((CORPUS + ["Verdict : yes no yes no"]) * 4, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|pad|>")
    target = tok.token_to_id("Ġ" + word)
    assert target is not None, f"' {word}' is not one token"
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512, mlp_bias=True,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None,
                         tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        down = model.model.layers[-1].mlp.down_proj
        down.weight.zero_()
        down.bias.zero_()
        down.bias[0] = 1e4
        model.lm_head.weight.zero_()
        model.lm_head.weight[target, 0] = 1.0
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def judges(tmp_path_factory) -> dict[str, Path]:
    return {word: build_forced_judge(tmp_path_factory.mktemp(f"judge-{word}"), word) for word in ("yes", "no")}


def _run(stage_cls, judge: str, tmp_path: Path):
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "cache",
                       options={"judge_model": judge})
    stage = stage_cls(stage_cls.Params(max_new_tokens=4), ctx)
    out = stage.run(ROWS.lazy())
    return stage, out, out.kept.collect(), out.rejected.collect()


@pytest.mark.parametrize("stage_cls", [JudgeDomain, JudgeSingleAnswer])
def test_no_drops_every_row_and_yes_keeps_it_in_process(stage_cls, judges, tmp_path):
    stage, out, kept, rejected = _run(stage_cls, str(judges["no"]), tmp_path / "no")
    assert kept.height == 0 and rejected.height == ROWS.height
    assert set(rejected["reason"]) == {stage.drop_reason} and set(rejected[f"{stage.name}_verdict"]) == {stage.drop_verdict}
    assert all(o.split()[0] == "no" for o in rejected[f"{stage.name}_output"])

    stage, out, kept, rejected = _run(stage_cls, str(judges["yes"]), tmp_path / "yes")
    assert rejected.height == 0 and kept["subject"].to_list() == ROWS["subject"].to_list()
    [entry] = stage.deviations(out.details)
    assert entry.id == f"{stage.slug}-stand-in" and str(judges["yes"]) in entry.kbench and "plain prompt" in entry.kbench


def test_the_served_chat_form_judges_the_same_way(judges, tmp_path):
    for word, expect_kept in (("no", 0), ("yes", ROWS.height)):
        port = free_port()
        with vllm_like(judges[word], port, tmp_path / f"{word}.log", name="judge", chat_template=CHAT_TEMPLATE):
            spec = f"openai:http://127.0.0.1:{port}/v1;model=judge;api=chat"
            stage, out, kept, rejected = _run(JudgeDomain, spec, tmp_path / word)
        assert kept.height == expect_kept and rejected.height == ROWS.height - expect_kept
        assert set(rejected["reason"]) <= {"domain_mismatch_judged"}
        judge = out.details["judge"]
        assert judge["prompt_form"] == "chat" and judge["cue"] == "ends the user turn"
        [entry] = stage.deviations(out.details)
        assert "chat prompt" in entry.kbench and "ends the user turn" in entry.kbench


def test_a_judge_that_did_not_run_records_the_skipped_step(tmp_path):
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0)
    stage = JudgeSingleAnswer(JudgeSingleAnswer.Params(), ctx)
    [entry] = stage.deviations(stage.run(ROWS.lazy()).details)
    assert entry.id == "single-answer-judge-not-run" and "gpt-4o-mini" in entry.paper
