"""Packed forward passes on a tiny random Llama, against each prompt run alone."""

from __future__ import annotations

import pytest
import torch
from transformers.cache_utils import Cache, DynamicLayer

from kbench.models.kv_cache import cache_of_prompts
from kbench.models.loading import load_model
from kbench.models.packing import MIN_ROW_WIDTH, last_token_logits, pack

# lengths 5, 40 (longer than MIN_ROW_WIDTH), 3, 20, 2, 9
SEQS = [[(7 * i + j) % 300 + 2 for j in range(n)] for i, n in enumerate((5, 40, 3, 20, 2, 9))]


@pytest.fixture(scope="module")
def model(tiny_causal_dir):
    return load_model(str(tiny_causal_dir)).model


def test_rows_hold_each_prompt_once_without_overlap(model):
    packed = pack(model, SEQS, pad_id=1, device="cpu")
    width = packed.input_ids.shape[1]
    assert width == max(MIN_ROW_WIDTH, 40)
    used = {}
    for seq, (row, start, n) in zip(SEQS, packed.spans):
        assert n == len(seq) and start + n <= width
        assert packed.input_ids[row, start:start + n].tolist() == seq
        assert packed.positions[row, start:start + n].tolist() == list(range(n))
        for col in range(start, start + n):
            assert (row, col) not in used
            used[row, col] = True
    assert packed.input_ids.shape[0] == 2  # 79 tokens in rows of 40: first-fit decreasing needs two


def test_last_token_logits_equal_each_prompt_alone(model):
    with torch.inference_mode():
        got = last_token_logits(model, pack(model, SEQS, pad_id=1, device="cpu"))
        for seq, row in zip(SEQS, got):
            alone = model(input_ids=torch.tensor([seq])).logits[0, -1].float()
            assert torch.allclose(row, alone, atol=1e-4)


def test_cache_of_prompts_right_aligns_each_prompts_keys_and_values(model):
    with torch.inference_mode():
        first, second = SEQS[:3], SEQS[3:]
        chunks = []
        for offset, seqs in ((0, first), (3, second)):
            packed = pack(model, seqs, pad_id=1, device="cpu")
            chunk_cache = Cache(layer_class_to_replicate=DynamicLayer)
            last_token_logits(model, packed, chunk_cache)
            chunks.append((chunk_cache, range(offset, offset + len(seqs)), packed.spans))
        cache = cache_of_prompts(chunks, [len(s) for s in SEQS], capacity=50)
        width = 40
        for i, seq in enumerate(SEQS):
            alone = Cache(layer_class_to_replicate=DynamicLayer)
            model(input_ids=torch.tensor([seq]), cache=alone, use_cache=True)
            for layer, reference in zip(cache.layers, alone.layers):
                assert layer.get_seq_length() == width
                assert torch.allclose(layer.keys[i, :, width - len(seq):], reference.keys[0], atol=1e-5)
                assert torch.allclose(layer.values[i, :, width - len(seq):], reference.values[0], atol=1e-5)
                assert not layer.keys[i, :, :width - len(seq)].any()  # pad slots hold zeros


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_sliding_window_layers_get_their_own_packed_mask(attention):
    """Gemma 3 mixes sliding-window and full layers; prompts longer than the window must see
    only the window in the sliding layers, packed as alone (and in the eager implementation's
    additive mask format as well as sdpa's boolean one)."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(vocab_size=320, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=4,
                              layer_types=["sliding_attention", "full_attention"], attn_implementation=attention)
    model = Gemma3ForCausalLM(config).eval()
    with torch.inference_mode():
        got = last_token_logits(model, pack(model, SEQS, pad_id=0, device="cpu"))
        for seq, row in zip(SEQS, got):
            alone = model(input_ids=torch.tensor([seq])).logits[0, -1].float()
            assert torch.allclose(row, alone, atol=1e-4)
