"""XTEVAL training pieces on tiny random models: InfoNCE, soft prompts (frozen model), fine-tuning."""

import math
import random

import pytest
import torch

from kbench.tasks.xteval.training.crossencoder import CrossEncoder, FinetuneConfig, finetune, info_nce, training_candidates
from kbench.tasks.xteval.documents import DocumentGenerator, Triple
from kbench.models.training.probes import answer_targets, run_probes, soft_probe
from kbench.tasks.xteval.training.softprompt import SoftPromptConfig, load_or_train, target_pairs, train_relation
from kbench.models.loading import load_model
from kbench.models.training import Trainer

PAIRS = [("Paris", "France"), ("Berlin", "Germany"), ("Rome", "Italy"), ("Madrid", "Spain"),
         ("Toyota", "Japan"), ("Nokia", "Finland")]


def test_info_nce_matches_hand_computation():
    scores = torch.tensor([[2.0, 1.0, 0.0], [0.0, 0.0, float("-inf")]])
    # row 1: -log(e^2 / (e^2 + e^1 + e^0)); row 2: -log(1/2) (the -inf candidate is padding)
    row1 = -math.log(math.exp(2) / (math.exp(2) + math.exp(1) + 1))
    expected = (row1 + math.log(2)) / 2
    assert info_nce(scores).item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("fixture", ["tiny_causal_dir", "tiny_masked_dir"])
def test_soft_prompt_training_lowers_loss_and_touches_only_the_vectors(fixture, request, caplog):
    loaded = Trainer(load_model(str(request.getfixturevalue(fixture))))  # what `Trainer.run` hands the routine
    before = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    cfg = SoftPromptConfig(lr=0.05, epochs=3, batch_size=6, warmup_ratio=0.0)
    pairs = target_pairs(loaded, PAIRS, "first-token")
    assert len(pairs) == len(PAIRS)   # every tail is one token of these tiny vocabularies
    with caplog.at_level("INFO"):
        vectors, log = train_relation(loaded, pairs, pairs[:3], cfg, seed=0, label="soft prompts P17")
    logged = [r.getMessage() for r in caplog.records]  # progress with its totals, then the milestone
    assert "soft prompts P17: 0/3 steps" in logged and any(m.startswith("soft prompts P17: 3/3 steps in") for m in logged)
    assert any(m.startswith("soft prompts P17: best dev accuracy") for m in logged)
    assert vectors.shape == (6, loaded.model.config.hidden_size)
    assert log["train_loss"][-1] < log["train_loss"][0]
    after = loaded.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)   # the model is frozen, bit for bit


def test_soft_prompts_are_saved_reused_and_checked(tiny_causal_dir, tmp_path):
    loaded = Trainer(load_model(str(tiny_causal_dir)))
    cfg = SoftPromptConfig(lr=0.05, epochs=1, batch_size=6)
    calls = []

    def pairs(relation):
        calls.append(relation)
        return PAIRS, PAIRS[:2]

    first = load_or_train(loaded, "P17", pairs, tmp_path, cfg, seed=3)
    again = load_or_train(loaded, "P17", pairs, tmp_path, cfg, seed=3)
    assert calls == ["P17"] and torch.equal(first.cpu(), again.cpu())
    assert (tmp_path / "P17.safetensors").exists()
    from kbench.errors import UserError

    with pytest.raises(UserError, match="another model, seed, criterion or config"):
        load_or_train(loaded, "P17", pairs, tmp_path, cfg, seed=4)
    with pytest.raises(UserError, match="another model, seed, criterion or config"):
        load_or_train(loaded, "P17", pairs, tmp_path, cfg, seed=3, criterion="full-answer")


def test_soft_probes_put_the_gold_where_it_is_read(tiny_causal_dir, tiny_masked_dir):
    causal = load_model(str(tiny_causal_dir))
    p = soft_probe(causal.tokenizer, "causal", "Paris", answer_targets(causal.tokenizer, "causal", "France", "full-answer"), 3, 3)
    n_gold = len(p.target_ids)
    assert p.ids[-n_gold:] == p.target_ids and p.logit_positions[0] == len(p.ids) - n_gold - 1
    assert sum(p.soft) == 6 and not any(p.soft[-n_gold:])
    masked = load_model(str(tiny_masked_dir))
    s = soft_probe(masked.tokenizer, "masked", "Paris", answer_targets(masked.tokenizer, "masked", "France"), 3, 3)
    assert sum(s.soft) == 6 and s.ids[0] == masked.tokenizer.cls_token_id and s.ids[-1] == masked.tokenizer.sep_token_id
    assert all(s.ids[i] == masked.tokenizer.mask_token_id for i in s.logit_positions)
    loss, hit = run_probes(masked.model, [s, s], masked.tokenizer.pad_token_id, torch.zeros(6, 32))
    assert loss.shape == (2,) and hit.dtype == torch.bool and torch.allclose(loss[0], loss[1])


@pytest.mark.parametrize("fixture", ["tiny_causal_dir", "tiny_masked_dir"])
def test_finetune_lowers_infonce_and_leaves_the_loaded_model_alone(fixture, request, caplog):
    loaded = Trainer(load_model(str(request.getfixturevalue(fixture))))
    before = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    facts = [Triple(h, "P17", t) for h, t in PAIRS] + [Triple("Marie Curie", "P19", "Warsaw"),
                                                       Triple("Albert Einstein", "P19", "Ulm")]
    gen = DocumentGenerator(facts, {"P17": ["[X] is in [Y] ."], "P19": ["[X] was born in [Y] ."]})
    cfg = FinetuneConfig(lr=1e-3, epochs=3, batch_size=4, micro_batch_size=4, validation_fraction=0.2, warmup_ratio=0.0)
    with caplog.at_level("INFO"):
        encoder, log = finetune(loaded, facts, gen, cfg, seed=0)
    logged = [r.getMessage() for r in caplog.records]
    assert "cross-encoder (seed 0): 0/6 steps" in logged and any(m.startswith("cross-encoder (seed 0): 6/6 steps in") for m in logged)
    assert any(m.startswith("cross-encoder (seed 0): best validation accuracy") for m in logged)
    assert log["train_loss"][-1] < log["train_loss"][0]
    assert 0 <= log["best_epoch"] < 3 and 0.0 <= log["val_accuracy"] <= 1.0
    assert all(torch.equal(before[k], v) for k, v in loaded.model.state_dict().items())
    rows = training_candidates(facts[:2], gen, 4, random.Random(0))
    scores = encoder.score_pairs(rows[0].query, rows[0].documents, cfg)
    assert len(scores) == len(rows[0].documents) and all(math.isfinite(s) for s in scores)


def test_cross_encoder_head_reads_last_real_token(tiny_causal_dir):
    enc = CrossEncoder(Trainer(load_model(str(tiny_causal_dir))), seed=0)
    cfg = FinetuneConfig()
    alone = enc.score_pairs("Paris is in", ["France"], cfg)
    padded = enc.score_pairs("Paris is in", ["France", "a much longer document about Germany and Italy"], cfg)
    assert alone[0] == pytest.approx(padded[0], abs=1e-5)   # right padding does not change the score


def test_soft_slots_holding_template_embeddings_equal_the_discrete_prompt(tiny_causal_dir):
    """The soft-prompt path is exact: vectors set to the template's own token embeddings give the
    same loss and top-1 as the plain text prompt "The capital of Paris is France"."""
    from kbench.models.training.probes import Probe

    loaded = load_model(str(tiny_causal_dir))
    tok = loaded.tokenizer
    before = tok("the capital of", add_special_tokens=False)["input_ids"]
    after = tok(" is", add_special_tokens=False)["input_ids"]
    vectors = loaded.model.get_input_embeddings().weight[torch.tensor(before + after)].detach()
    soft, plain = [], []
    for head, tail in PAIRS:
        soft.append(soft_probe(tok, "causal", head, answer_targets(tok, "causal", tail, "full-answer"), len(before), len(after)))
        prompt = tok(f"the capital of {head} is", add_special_tokens=False)["input_ids"]
        gold = tok(" " + tail, add_special_tokens=False)["input_ids"]
        plain.append(Probe(prompt + gold, [False] * (len(prompt) + len(gold)),
                           [len(prompt) - 1 + i for i in range(len(gold))], gold))
    with torch.no_grad():
        soft_loss, soft_hit = run_probes(loaded.model, soft, tok.pad_token_id, vectors)
        plain_loss, plain_hit = run_probes(loaded.model, plain, tok.pad_token_id, None)
    assert torch.allclose(soft_loss, plain_loss, atol=1e-5) and torch.equal(soft_hit, plain_hit)


def test_template_init_picks_the_words_around_the_head(tiny_causal_dir):
    from kbench.tasks.xteval.training.softprompt import template_init

    tok = load_model(str(tiny_causal_dir)).tokenizer
    before = tok("the capital of", add_special_tokens=False)["input_ids"]
    is_ids = tok(" is", add_special_tokens=False)["input_ids"]

    def token_ids(text: str) -> list[int]:  # what `Trainer.token_ids` gives the routine
        return tok(text, add_special_tokens=False)["input_ids"]

    ids = template_init(token_ids, "the capital of [X] is [Y] .", 2, 3)
    assert ids == before[-2:] + is_ids + [None] * (3 - len(is_ids))
    assert template_init(token_ids, "[X] is [Y] .", 3, 1) == [None, None, None] + is_ids[:1]
    assert template_init(token_ids, "[Y] participated in the [X] .", 3, 3) == [None] * 6   # object first: no init
