"""Shared-prefix activations (`kbench.models.shared_prefix`): the levels a batch is cut into, and
activations read through them equal to full passes (packed and padded) on a tiny random model."""

from __future__ import annotations

import pytest
import torch

from kbench.models import packing
from kbench.models.loading import load_model
from kbench.models.runner import ModelRunner
from kbench.models.shared_prefix import levels, shared_tokens
from tests.fixtures_models import TEST_DEVICE

SYSTEM = "System: answer with a short answer.\nQuestion: "
QUESTIONS = ["capital of France?", "capital of Germany?", "river of Ulm?"]
# true and false statements of each question (ITI's contrast pairs), all under one system prompt
STATEMENTS = [f"{SYSTEM}{q}\nAnswer: {a}" for q in QUESTIONS for a in ("Paris", "Rome")] + [f"{SYSTEM}Ulm?\nAnswer: Danube"]


def test_levels_run_the_batch_prefix_then_each_group_prefix_then_each_sequence_once():
    seqs = [[1, 2, 3, 4, 5], [1, 2, 3, 4, 6], [1, 2, 7, 8], [1, 2, 7, 9, 9], [1, 2, 3]]
    common, groups, own = levels(seqs)
    assert common.segments == [[1, 2]] and common.parents is None
    assert groups.segments == [[3, 4], [7], []] and groups.parents == [0, 0, 0]
    assert own.segments == [[5], [6], [8], [9, 9], [3]] and own.parents == [0, 0, 1, 1, 2]
    # every sequence is its path of segments, and its last token is always its own
    for i, seq in enumerate(seqs):
        path = common.segments[0] + groups.segments[own.parents[i]] + own.segments[i]
        assert path == seq and own.segments[i]
    assert shared_tokens(seqs) == 2 + 3 + 6 < sum(map(len, seqs)) == 22


def test_levels_without_a_common_prefix_or_without_groups():
    no_common = levels([[1, 2, 3], [1, 2, 4], [5, 6]])
    assert [lv.segments for lv in no_common] == [[[1, 2], []], [[3], [4], [5, 6]]] and no_common[0].parents is None
    assert no_common[1].parents == [0, 0, 1]
    only_common = levels([[1, 2, 3], [1, 2, 4]])
    assert [lv.segments for lv in only_common] == [[[1, 2]], [[3], [4]]] and only_common[1].parents == [0, 0]
    assert [lv.segments for lv in levels([[7, 8, 9]])] == [[[7, 8]], [[9]]]


@pytest.fixture(scope="module")
def causal(tiny_causal_dir):
    return load_model(str(tiny_causal_dir), device=TEST_DEVICE)


def _alone(loaded, text, site, layers):
    """Activations of one text run alone, unbatched (the reference)."""
    runner = ModelRunner(loaded)
    runner._shares_prefixes = lambda encoded: False
    return runner.activations([text], site, layers)[0]


@pytest.mark.parametrize("site", ["heads", "residual"])
def test_shared_prefix_activations_equal_full_passes_packed_and_padded(causal, site, monkeypatch):
    runner = ModelRunner(causal)
    encoded = runner.encoder.encode(STATEMENTS)
    assert runner._shares_prefixes(encoded)  # this call takes the shared-prefix path
    layers = [0, 2, 3]
    shared = runner.activations(STATEMENTS, site, layers)

    full = ModelRunner(causal)
    full._shares_prefixes = lambda encoded: False
    assert full.packs(None)
    packed = full.activations(STATEMENTS, site, layers)
    monkeypatch.setattr(packing, "_WORKS", {causal.model: False})
    padded = full.activations(STATEMENTS, site, layers)
    assert shared.shape == packed.shape == padded.shape
    assert torch.allclose(shared, packed, atol=1e-5) and torch.allclose(shared, padded, atol=1e-5)
    assert not torch.equal(shared[0], shared[1])  # true and false statements differ at their last token
    assert torch.equal(runner.activations(STATEMENTS, site, layers), shared)  # the same call, the same bits


def test_shared_prefix_batches_cut_by_tokens_read_each_texts_last_position(causal, monkeypatch):
    from kbench.models import batching as batching_module

    monkeypatch.setattr(batching_module, "CPU_PACKED_TOKENS", 12)  # several batches, pairs split across them
    texts = [*STATEMENTS, "Answer: Rome", "Rome"]  # no prefix common to all: a first level with an empty node
    runner = ModelRunner(causal)
    assert runner._shares_prefixes(runner.encoder.encode(texts))
    got = runner.activations(texts, "heads", [1])
    for text, row in zip(texts, got):
        assert torch.allclose(row, _alone(causal, text, "heads", [1]), atol=1e-5)


def test_batched_strongest_attention_equals_one_sequence_at_a_time(causal):
    from kbench.tasks.kee.techniques.decore import copy_task

    sequences, queries, _ = copy_task(causal.model.config.vocab_size, 5, 6, 10, seed=0)
    sequences[4] = sequences[4][:-1]  # a shorter one: left-padded in the batch
    runner = ModelRunner(causal)
    batched = [runner.strongest_attention(sequences, queries)[i] for i in range(5)]
    alone = [runner.strongest_attention([s], queries)[0] for s in sequences]
    assert batched[0].shape == (4, 4, len(queries))
    assert all(torch.equal(b, a) for b, a in zip(batched, alone))
    assert causal.model.config._attn_implementation != "eager"  # restored after the call


def test_strongest_sources_needs_attention_weights(causal):
    from kbench.errors import UserError
    from kbench.models import hooks

    assert causal.model.config._attn_implementation != "eager"  # sdpa returns no weights
    with pytest.raises(UserError, match="eager attention"), hooks.strongest_sources(causal.model, torch.tensor([[1]], device=causal.model.device)):
        causal.model(torch.tensor([[5, 6, 7]], device=causal.model.device), use_cache=False)
