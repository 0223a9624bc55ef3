"""The white-box interface: activations and attention read by the Hugging Face backend against
plain transformers outputs, served from the result cache on a repeat, refused by a backend
without `white_box`; and the one padding helper."""

from __future__ import annotations

import pytest
import torch

from kbench.errors import UserError
from kbench.models.cached import CachedModel
from kbench.models.interface import Capability, Intervention, Steering
from kbench.models.padding import pad_left, pad_right, token_grid, unpad_left
from kbench.models.result_cache import ResultCache
from kbench.models.runner import ModelRunner
from tests.unit.test_cached_model import CountingBackend
from tests.unit.test_runner import count_forwards

TEXTS = ["Question: capital of France?\nAnswer: Paris", "Question: Ulm?\nAnswer: Germany", "Answer: Rome"]


def _last_states(loaded, text):
    ids = loaded.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return torch.stack(loaded.model(ids, output_hidden_states=True).hidden_states[1:])[:, 0, -1]  # (layers, hidden)


def test_residual_activations_match_transformers_and_a_repeat_is_served_from_the_cache(tiny_causal, tmp_path):
    cache = ResultCache(tmp_path / "results.sqlite")
    model = CachedModel(ModelRunner(tiny_causal), cache)
    layout = model.layout()
    assert (layout.num_layers, layout.num_heads, layout.vocab_size) == (4, 4, tiny_causal.model.config.vocab_size)
    got = model.activations(TEXTS, "residual", [0, 2])
    assert got.shape == (3, 2, layout.hidden_size) and got.dtype == torch.float32
    for text, row in zip(TEXTS, got):
        assert torch.allclose(row, _last_states(tiny_causal, text)[[0, 2]], atol=1e-5)
    with count_forwards(tiny_causal) as shapes:
        again = CachedModel(ModelRunner(tiny_causal), cache).activations(TEXTS, "residual", [0, 2])
    assert shapes == [] and torch.equal(again, got)               # the same bits, no forward pass
    other = model.activations(TEXTS, "residual", [1])             # other layers: other keys
    assert torch.allclose(other[:, 0], torch.stack([_last_states(tiny_causal, t)[1] for t in TEXTS]), atol=1e-5)


def test_head_activations_are_the_output_projection_inputs(tiny_causal):
    from kbench.models import hooks

    model = ModelRunner(tiny_causal)
    got = model.activations(TEXTS[:2], "heads", [1, 3])
    for text, row in zip(TEXTS[:2], got):
        ids = tiny_causal.tokenizer(text, return_tensors="pt")["input_ids"]
        with torch.no_grad(), hooks.capture_head_inputs(tiny_causal.model, [1, 3]) as seen:
            tiny_causal.model(ids)
        assert torch.allclose(row, torch.stack([seen[1][0, -1], seen[3][0, -1]]), atol=1e-5)


def test_rank_under_each_last_position_edit_is_rank_first_token_under_it(tiny_causal, tmp_path):
    from tests.unit.test_runner import GOLDS, PROMPTS

    model = CachedModel(ModelRunner(tiny_causal), ResultCache(tmp_path / "results.sqlite"))
    hidden = model.layout().hidden_size
    edits = [Intervention(f"steer-{layer}", edits=(Steering(layer, torch.linspace(-2, 2, hidden)),)) for layer in range(4)]
    each = model.rank_first_token_each(PROMPTS, GOLDS, edits)
    for intervention, ranks in zip(edits, each):
        alone = model.rank_first_token(PROMPTS, GOLDS, intervention=intervention)
        assert [r for r, _ in ranks] == [r for r, _ in alone]
        assert [lp for _, lp in ranks] == pytest.approx([lp for _, lp in alone], abs=1e-4)
    assert each[0] != each[3]
    with count_forwards(tiny_causal) as shapes:
        assert CachedModel(ModelRunner(tiny_causal), model.cache).rank_first_token_each(PROMPTS, GOLDS, edits) == each
    assert shapes == []


def test_strongest_attention_is_the_argmax_of_eager_attention_and_is_cached(tiny_causal, tmp_path):
    cache = ResultCache(tmp_path / "results.sqlite")
    sequence = [5, 17, 33, 8, 5, 17, 33, 8]
    got = CachedModel(ModelRunner(tiny_causal), cache).strongest_attention([sequence], [5, 7])
    previous = tiny_causal.model.config._attn_implementation
    tiny_causal.model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            attentions = tiny_causal.model(torch.tensor([sequence]), output_attentions=True).attentions
    finally:
        tiny_causal.model.set_attn_implementation(previous)
    expected = torch.stack([a[0][:, [5, 7]].argmax(-1) for a in attentions])
    assert torch.equal(got[0], expected)
    with count_forwards(tiny_causal) as shapes:
        assert torch.equal(CachedModel(ModelRunner(tiny_causal), cache).strongest_attention([sequence], [5, 7]), got)
    assert shapes == []


def test_a_backend_without_white_box_refuses_white_box_calls():
    model = CachedModel(CountingBackend(), None)
    assert Capability.WHITE_BOX not in model.info.capabilities
    with pytest.raises(UserError, match="needs the capability 'white_box'.*backends that have it: hf"):
        model.layout()
    with pytest.raises(UserError, match="white_box"):
        model.activations(TEXTS, "residual", [0])
    steer = Intervention("steer", edits=(Steering(0, torch.zeros(4)),))
    with pytest.raises(UserError, match="white_box"):
        model.generate(TEXTS, 4, intervention=steer)
    assert model.inner.calls == []


def test_one_padding_helper():
    ids, mask, positions = pad_left([[5, 6, 7], [8]], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]] and mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert positions.tolist() == [[0, 1, 2], [0, 0, 0]] and unpad_left(ids, 0) == [[5, 6, 7], [8]]
    ids, mask = pad_right([[5, 6, 7], [8]], pad_id=1)
    assert ids.tolist() == [[5, 6, 7], [8, 1, 1]] and mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    ids, mask = token_grid([(0, 0, [5, 6]), (0, 3, [7]), (1, 1, [8])], rows=2, width=4, pad_id=0)  # packed rows
    assert ids.tolist() == [[5, 6, 0, 7], [0, 8, 0, 0]] and mask.tolist() == [[1, 1, 0, 1], [0, 1, 0, 0]]
