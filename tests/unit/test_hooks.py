"""Intervention hooks on a tiny random Llama: each hook changes the logits, and leaving the
context restores them bit-exactly."""

from __future__ import annotations

import pytest
import torch

from kbench.errors import UserError
from kbench.models import hooks
from kbench.models.loading import load_model


@pytest.fixture(scope="module")
def tiny(tiny_causal_dir):
    loaded = load_model(str(tiny_causal_dir))
    batch = loaded.tokenizer(["Paris is the capital of", "Marie Curie was born in"], return_tensors="pt", padding=True)
    return loaded.model, batch


def _logits(model, batch):
    with torch.no_grad():
        return model(**batch).logits


def test_add_to_residual_changes_and_restores(tiny):
    model, batch = tiny
    before = _logits(model, batch)
    vector = torch.randn(model.config.hidden_size, generator=torch.Generator().manual_seed(1))
    with hooks.add_to_residual(model, layer=1, vector=vector, multiplier=1.0):
        steered = _logits(model, batch)
    assert not torch.allclose(before, steered)
    assert torch.equal(_logits(model, batch), before)


def test_shift_and_mask_heads_change_and_restore(tiny):
    model, batch = tiny
    layout = hooks.head_layout(model)
    assert (layout.num_layers, layout.num_heads, layout.head_dim) == (4, 4, 16)
    before = _logits(model, batch)
    shift = torch.zeros(layout.num_heads, layout.head_dim)
    shift[2] = 3.0
    with hooks.shift_heads(model, {1: shift}):
        shifted = _logits(model, batch)
    with hooks.mask_heads(model, {0: [0, 3], 2: [1]}):
        masked = _logits(model, batch)
    assert not torch.allclose(before, shifted) and not torch.allclose(before, masked)
    assert torch.equal(_logits(model, batch), before)


def test_last_only_changes_only_the_last_position(tiny):
    model, batch = tiny
    before = _logits(model, batch)
    layout = hooks.head_layout(model)
    vector = torch.randn(model.config.hidden_size, generator=torch.Generator().manual_seed(2))
    shift = torch.full((layout.num_heads, layout.head_dim), 2.0)
    for intervention in (hooks.add_to_residual(model, 1, vector, last_only=True),
                         hooks.shift_heads(model, {1: shift}, last_only=True)):
        with intervention:
            after = _logits(model, batch)
        assert torch.equal(after[:, :-1], before[:, :-1])      # causal: earlier positions see no change
        assert not torch.allclose(after[:, -1], before[:, -1])
    assert torch.equal(_logits(model, batch), before)


def test_zero_shift_and_empty_mask_are_identity(tiny):
    model, batch = tiny
    before = _logits(model, batch)
    layout = hooks.head_layout(model)
    with hooks.shift_heads(model, {3: torch.zeros(layout.num_heads, layout.head_dim)}), hooks.mask_heads(model, {1: []}):
        assert torch.equal(_logits(model, batch), before)


def test_capture_residual_and_head_inputs(tiny):
    model, batch = tiny
    with hooks.capture_residual(model, [3]) as residual, hooks.capture_head_inputs(model, [0]) as heads:
        with torch.no_grad():
            out = model(**batch, output_hidden_states=True)
    # hidden_states[i + 1] is the output of block i (the last one has the final norm applied)
    assert residual[3].shape == (2, batch["input_ids"].shape[1], model.config.hidden_size)
    assert torch.equal(out.hidden_states[3], _block_output(model, batch, 2))
    assert heads[0].shape == (2, batch["input_ids"].shape[1], 4, 16)
    # masking a head zeroes exactly that slice of the captured o_proj input
    with hooks.mask_heads(model, {0: [1]}), hooks.capture_head_inputs(model, [0]) as masked:
        _logits(model, batch)
    assert torch.count_nonzero(masked[0][..., 1, :]) == 0 and torch.count_nonzero(masked[0][..., 0, :]) > 0


def _block_output(model, batch, layer):
    with hooks.capture_residual(model, [layer]) as seen:
        _logits(model, batch)
    return seen[layer]


def test_unknown_layer_and_architecture_are_user_errors(tiny):
    model, _ = tiny
    with pytest.raises(UserError, match="layer 9 does not exist"):
        hooks.add_to_residual(model, layer=9, vector=torch.zeros(64))
    with pytest.raises(UserError, match="not supported"):
        hooks.decoder_layers(torch.nn.Linear(2, 2))
