"""Each KEE technique's arithmetic against values computed by hand (the pure function the
technique applies to logits / activations), and on the tiny random Llama against an independent
computation (plain transformers outputs, a copy of the model with heads cut out of its weights).

Hand values: every expected number below is derived in its comment from the formula of the
paper / reference code, not read off our output."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from kbench.errors import UserError
from kbench.tasks.kee.techniques import get_technique, parse_technique_params
from kbench.tasks.kee.techniques.activation_decoding import info_layer
from kbench.tasks.kee.techniques.base import KeeContext
from kbench.tasks.kee.techniques.caa import CAA, best_layer, mean_difference
from kbench.tasks.kee.techniques.decore import top_heads
from kbench.tasks.kee.techniques.iti import head_intervention, head_shifts, heads_to_shift, select_heads
from kbench.tasks.kee.techniques.recite import vote
from kbench.models import hooks
from kbench.models.interface import ActivationEntropy, MaskedHeadContrast
from kbench.models.interventions import (PromptEntropies, activation_entropy, contrast, in_context_entropy,
                                         masked_head_contrast, realise, sharpness_scores)
from kbench.models.loading import load_model
from kbench.models.runner import ModelRunner

LN2 = math.log(2)


@pytest.fixture(scope="module")
def loaded(tiny_causal_dir):
    return load_model(str(tiny_causal_dir))


def _ids(loaded, text):
    return loaded.tokenizer(text, return_tensors="pt")["input_ids"]


# ---------------------------------------------------------------- DeCoRe
def test_decore_contrast_by_hand():
    # base [0, 0]: uniform over 2 tokens, a = H = ln 2; (1 + ln 2)·0 − ln 2·[1, 0] = [−ln 2, 0]
    got = contrast(torch.tensor([[0.0, 0.0]]), torch.tensor([[1.0, 0.0]]))
    assert got.tolist()[0] == pytest.approx([-LN2, 0.0], abs=1e-6)
    # base [2, 0, 0]: Z = e² + 2, H = ln Z − 2e²/Z = 2.239487 − 1.573914 = 0.665573
    # masked [0, 1, 0]: [(1 + H)·2 − 0, −H·1, 0] = [3.331146, −0.665573, 0]
    base, masked = torch.tensor([[2.0, 0.0, 0.0]]), torch.tensor([[0.0, 1.0, 0.0]])
    assert contrast(base, masked).tolist()[0] == pytest.approx([3.331146, -0.665573, 0.0], abs=1e-5)
    # alpha_cap 0.5 < H: [(1.5)·2, −0.5, 0]
    assert contrast(base, masked, alpha_cap=0.5).tolist()[0] == pytest.approx([3.0, -0.5, 0.0], abs=1e-6)


def test_decore_processor_contrasts_with_the_heads_cut_out_of_the_weights(loaded):
    """The masked logits come from the same model with the heads zeroed at o_proj's input; an
    independent copy whose o_proj weight columns of those heads are zero must give the same."""
    model, layout = loaded.model, hooks.head_layout(loaded.model)
    masked_heads = {0: [1, 3], 2: [0]}
    ablated = copy.deepcopy(model)
    with torch.no_grad():
        for layer, heads in masked_heads.items():
            for head in heads:
                ablated.model.layers[layer].self_attn.o_proj.weight[:, head * layout.head_dim:(head + 1) * layout.head_dim] = 0
    ids = _ids(loaded, "Question: Where was Dante born?\nAnswer:")
    with torch.no_grad():
        base = model(ids).logits[:, -1].float()
        cut = ablated(ids).logits[:, -1].float()
    got = masked_head_contrast(model, loaded.tokenizer.pad_token_id, MaskedHeadContrast(masked_heads))(ids, base)
    p = base.softmax(-1)
    h = -(p * p.log()).sum(-1, keepdim=True)
    assert torch.allclose(got, (1 + h) * base - h * cut, atol=1e-4)
    assert not torch.allclose(cut, base, atol=1e-4)   # the masking really changed the logits


def test_decore_masks_the_top_retrieval_heads():
    scores = torch.tensor([[0.1, 0.7], [0.7, 0.2], [0.0, 0.9]])   # (layers, heads)
    # 0.9 at (2, 1), then the tie 0.7 at (0, 1) and (1, 0): lower layer first
    assert top_heads(scores, 3) == [[2, 1], [0, 1], [1, 0]]


def test_decore_records_what_it_masked_and_how(loaded, tmp_path):
    technique = get_technique("decore", retrieval_heads=3, trials=1)
    record = technique.heads(KeeContext(model=ModelRunner(loaded), fit_dir=tmp_path))
    assert len(record["masked_heads"]) == 3 and len(record["retrieval_scores"]) == 3
    assert record["retrieval_scores"] == sorted(record["retrieval_scores"], reverse=True)
    assert "retrieval score" in record["selection"] and "1 teacher-forced" in record["selection"]
    with pytest.raises(UserError, match="17 retrieval heads but the model has 16"):
        get_technique("decore", retrieval_heads=17).check(ModelRunner(loaded))


# ---------------------------------------------------------------- Activation Decoding
def test_in_context_entropy_is_over_positions_of_the_raw_activation():
    # 2 positions × 3 tokens; per token v, softmax over the positions of z_i(v):
    # v0: z = [0, 0]     -> q = [1/2, 1/2]  -> H = ln 2
    # v1: z = [ln 3, 0]  -> q = [3/4, 1/4]  -> H = −(.75 ln .75 + .25 ln .25) = 0.562335
    # v2: z = [0, 100]   -> q ≈ [0, 1]      -> H ≈ 0
    logits = torch.tensor([[0.0, math.log(3), 0.0], [0.0, 0.0, 100.0]])
    assert in_context_entropy(logits).tolist() == pytest.approx([LN2, 0.562335, 0.0], abs=1e-5)


def test_sharpness_scores_by_hand():
    # p = [4, 2, 1, 1] / 8 -> log p = [−0.693147, −1.386294, −2.079442, −2.079442]; H = [0, 1, 0, 2]
    # score = log p − 0.5·H = [−0.693147, −1.886294, −2.079442, −3.079442]
    final = torch.tensor([[math.log(4), math.log(2), 0.0, 0.0]])
    entropy = torch.tensor([[0.0, 1.0, 0.0, 2.0]])
    plain = [-0.693147, -1.886294, -2.079442, -3.079442]
    assert sharpness_scores(final, entropy, 0.5, 0.0).tolist()[0] == pytest.approx(plain, abs=1e-5)
    # relative_top 0.3: plausible iff p >= 0.3 · 0.5 = 0.15 -> tokens 0 and 1. The others move down
    # by the score range + 1 = (−0.693147 + 3.079442) + 1 = 3.386295: −5.465737, −6.465737
    got = sharpness_scores(final, entropy, 0.5, 0.3).tolist()[0]
    assert got == pytest.approx([-0.693147, -1.886294, -5.465737, -6.465737], abs=1e-5)


def test_activation_decoding_entropy_uses_the_prompt_positions_only(loaded):
    """Expected: softmax over the prompt's positions of lm_head(hidden_states[layer + 1]) (no
    final norm), from plain transformers outputs; the same entropy once tokens were generated,
    and for a left-padded row of a batch."""
    model, pad = loaded.model, loaded.tokenizer.pad_token_id
    layer = info_layer(hooks.head_layout(model).num_layers)
    assert layer == 2   # round(0.8125 · 4) − 1
    prompt, other = _ids(loaded, "Question: Where was Dante born?\nAnswer:"), _ids(loaded, "Question: Ulm?\nAnswer:")
    with torch.no_grad():
        states = model(prompt, output_hidden_states=True).hidden_states[layer + 1][0]
        expected = in_context_entropy(model.get_output_embeddings()(states))
    entropies = PromptEntropies(model, pad, layer, final_norm=False)
    with torch.no_grad():
        first = entropies(prompt)[0]
        generated = torch.cat([prompt, torch.tensor([[5, 9, 11]])], 1)   # the prompt, then 3 decoded tokens
        padded = torch.full((2, generated.shape[1]), pad)
        padded[0], padded[1, -other.shape[1]:] = generated[0], other[0]
        later = entropies(padded)
    assert torch.allclose(first, expected, atol=1e-5)
    assert torch.allclose(later[0], expected, atol=1e-5)            # positions of the prompt, not of the answer
    with torch.no_grad():
        other_states = model(other, output_hidden_states=True).hidden_states[layer + 1][0]
    assert torch.allclose(later[1], in_context_entropy(model.get_output_embeddings()(other_states)), atol=1e-5)


def test_activation_decoding_processor_applies_the_formula(loaded):
    model, pad = loaded.model, loaded.tokenizer.pad_token_id
    ids = _ids(loaded, "Question: Which country is Toyota from?\nAnswer:")
    with torch.no_grad():
        final = model(ids).logits[:, -1].float()
        states = model(ids, output_hidden_states=True).hidden_states[info_layer(4) + 1][0]
        h = in_context_entropy(model.model.norm(states) @ model.get_output_embeddings().weight.T)
        got = activation_entropy(model, pad, ActivationEntropy(info_layer(4), 2.0, 0.0, final_norm=True))(ids, final)
    assert torch.allclose(got[0], final[0].log_softmax(-1) - 2.0 * h, atol=1e-4)


# ---------------------------------------------------------------- ITI
def test_iti_shift_by_hand():
    # one layer, two heads, head_dim 2; head (0, 1) selected
    # true [2, 0], [4, 0] (mean [3, 0]); false [0, 0], [0, 2] (mean [0, 1]) -> d = [3, −1] / √10
    # projections · √10: 6, 12, 0, −2 -> mean 4, population variance (4 + 64 + 16 + 36) / 4 = 30
    # -> sigma = √30 / √10 = √3; shift = 15 · √3 · [3, −1] / √10 = [24.647515, −8.215838]
    true = torch.zeros(2, 1, 2, 2)
    false = torch.zeros(2, 1, 2, 2)
    true[:, 0, 1] = torch.tensor([[2.0, 0.0], [4.0, 0.0]])
    false[:, 0, 1] = torch.tensor([[0.0, 0.0], [0.0, 2.0]])
    true[:, 0, 0] = torch.tensor([[9.0, 9.0], [1.0, 1.0]])        # head 0 has activations but is not selected
    shifts, sigmas = head_shifts([(0, 1)], true, false, alpha=15.0, num_heads=2)
    assert sigmas == pytest.approx([math.sqrt(3)], abs=1e-6)
    assert shifts[0][1].tolist() == pytest.approx([24.647515, -8.215838], abs=1e-5)
    assert shifts[0][0].tolist() == [0.0, 0.0]


def test_iti_selects_top_k_heads_and_k_is_48_unless_asked():
    assert select_heads([0.5, 0.9, 0.9, 0.7], 2, num_heads=2) == [(0, 1), (1, 0)]   # tie: lower index first
    assert heads_to_shift(30 * 9, 48, scale=False) == 48                              # SmolLM2: 270 heads
    assert heads_to_shift(30 * 9, 48, scale=True) == 13                               # round(48 · 270 / 1024)
    assert heads_to_shift(16, 48, scale=True) == 1                                    # round(0.75)
    with pytest.raises(UserError, match="K = 48 heads but the model has 16"):
        heads_to_shift(16, 48, scale=False)


def test_iti_moves_only_the_chosen_heads_at_the_last_position(loaded):
    model, layout = loaded.model, hooks.head_layout(loaded.model)
    shift = torch.zeros(layout.num_heads, layout.head_dim)
    shift[2] = torch.arange(layout.head_dim, dtype=torch.float32) / 10
    ids = _ids(loaded, "Question: Where was Marie Curie born?\nAnswer:")
    with torch.no_grad(), hooks.capture_head_inputs(model, [1]) as before:
        model(ids)
    shifted = realise(model, loaded.tokenizer.pad_token_id, head_intervention({1: shift}))
    with torch.no_grad(), shifted.hooks(model), hooks.capture_head_inputs(model, [1]) as after:
        model(ids)
    delta = after[1] - before[1]                      # (batch, seq, heads, head_dim)
    assert torch.allclose(delta[0, -1, 2], shift[2], atol=1e-6)
    assert torch.count_nonzero(delta[0, -1, [0, 1, 3]]) == 0   # other heads untouched
    assert torch.count_nonzero(delta[0, :-1]) == 0             # earlier positions untouched


# ---------------------------------------------------------------- CAA
def test_caa_mean_difference_and_layer_choice_by_hand():
    # true: 2 statements × 2 layers × 2 dims, mean [[2, 2], [4, 2]]; false: one, [[0, 0], [1, 1]]
    true = torch.tensor([[[1.0, 2.0], [3.0, 4.0]], [[3.0, 2.0], [5.0, 0.0]]])
    false = torch.tensor([[[0.0, 0.0], [1.0, 1.0]]])
    assert mean_difference(true, false).tolist() == [[2.0, 2.0], [3.0, 1.0]]
    # Δp = mean(p_steered − p_base): layer 0: (0 + 0.25) / 2 = 0.125; layers 1 and 2: 0.25 -> layer 1
    base = [0.25, 0.5]
    steered = {2: [0.5, 0.75], 0: [0.25, 0.75], 1: [0.75, 0.5]}
    assert best_layer(base, steered) == (1, 0.25)
    assert best_layer(base, {0: [0.0, 0.25], 1: [0.25, 0.25]}) == (1, -0.125)   # all negative: least bad


def test_caa_vectors_are_mean_last_token_residual_differences(loaded):
    """Against hidden_states[l + 1] at each text's last token from plain transformers (the last
    block's entry there has the final norm applied, so it is compared up to the one before)."""
    true = ["Question: capital of France?\nAnswer: Paris", "Question: capital of Italy?\nAnswer: Rome"]
    false = ["Question: capital of France?\nAnswer: Rome", "Question: Spain?\nAnswer: Paris", "Answer: Ulm"]
    context = KeeContext(model=ModelRunner(loaded), fit_dir=None)
    got = CAA.vectors(context, true, false)

    def last_states(text):
        with torch.no_grad():
            return torch.stack(loaded.model(_ids(loaded, text), output_hidden_states=True).hidden_states[1:])[:, 0, -1]

    expected = torch.stack([last_states(t) for t in true]).mean(0) - torch.stack([last_states(t) for t in false]).mean(0)
    assert got.shape == (4, loaded.model.config.hidden_size)
    assert torch.allclose(got[:-1], expected[:-1], atol=1e-5)


# ---------------------------------------------------------------- RECITE
def test_recite_vote_groups_normalised_answers_and_breaks_ties_by_first_run():
    # "Rome" x2 (runs 0, 3) ties "paris" x2 (runs 1, 2): the group seen first wins, as written in run 0,
    # with run 0's rank and logprob
    out = vote([("Rome", 5, -1.0), ("paris", 3, -2.0), ("Paris.", 2, -0.5), ("rome ", 7, -3.0)])
    assert (out.answer, out.gold_rank, out.gold_logprob, out.detail["winning_run"]) == ("Rome", 5, -1.0, 0)
    # a strict majority later in the list wins, with the rank of its first run
    out = vote([(" Ulm", 1, -0.1), ("Bonn", 4, -2.0), ("bonn", 2, -1.5)])
    assert (out.answer, out.gold_rank, out.detail["winning_run"]) == ("Bonn", 4, 1)
    assert out.detail["answers"] == ["Ulm", "Bonn", "bonn"]


# ---------------------------------------------------------------- settings
def test_technique_params_are_validated_and_parsed():
    assert parse_technique_params(["iti.heads=13", "iti.scale_heads=true", "caa.select_limit=null"]) == \
        {"iti": {"heads": 13, "scale_heads": True}, "caa": {"select_limit": None}}
    assert parse_technique_params(["temp0.7.votes=3"]) == {"temp0.7": {"votes": 3}}  # a name with a dot
    with pytest.raises(UserError, match="NAME.KEY=VALUE"):
        parse_technique_params(["heads=13"])
    with pytest.raises(UserError, match="technique 'iti': heads: Input should be greater than or equal to 1"):
        get_technique("iti", heads=0)
    with pytest.raises(UserError, match="technique 'caa': layers: Extra inputs are not permitted"):
        get_technique("caa", layers=3)
    assert get_technique("iti").params() == {"alpha": 15.0, "heads": 48, "scale_heads": False, "held_out": 0.2, "probe_data": "auto"}


def test_settings_resolve_to_validated_params_before_anything_runs(loaded):
    from kbench.tasks.kee.techniques.settings import resolve

    got = resolve(("baseline", "temp0.7", "recite", "iti"), 5, 40, 0.9, {"iti": {"heads": 4}}, ModelRunner(loaded))
    assert got["temp0.7"] == {"temperature": 0.7, "votes": 10, "recovery_samples": 0, "seed": 0, "top_k": 40, "top_p": 0.9}
    assert got["recite"]["runs"] == 5 and got["iti"]["heads"] == 4 and got["baseline"] == {}
    with pytest.raises(UserError, match="given for caa, which --techniques does not run"):
        resolve(("baseline",), 20, None, 1.0, {"caa": {"multiplier": 2}})
    with pytest.raises(UserError, match="0 < top_p <= 1"):
        resolve(("baseline",), 20, None, 0.0, {})
    with pytest.raises(UserError, match="K = 48 heads but the model has 16"):
        resolve(("baseline", "iti"), 20, None, 1.0, {}, ModelRunner(loaded))
