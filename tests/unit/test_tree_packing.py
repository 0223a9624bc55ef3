"""Answers sharing a prompt scored as a token tree (kbench/models/tree_packing.py): the values of
separate full passes, whether the answers fit one row or spill into several blocks."""

from __future__ import annotations

import pytest

from kbench.models import tree_packing
from kbench.models.loading import load_model
from kbench.models.runner import ModelRunner
from tests.fixtures_models import TEST_DEVICE


@pytest.fixture(scope="module")
def runner(tiny_causal_dir):
    return ModelRunner(load_model(str(tiny_causal_dir), device=TEST_DEVICE))


def alone(runner, prompts, answers):
    return [runner.score_answers([p], [a])[0] for p, a in zip(prompts, answers)]  # one item: a plain padded pass


def test_shared_prompts_score_as_full_passes(runner):
    prompts = ["Marie Curie was born in"] * 3 + ["The capital of France is"] * 3 + ["Rome"]
    answers = [" Warsaw .", " Ulm .", " Florence is a city ."] * 2 + [" is"]
    assert runner._scores_trees(runner.encoder.continuations(prompts, answers))
    together = runner.score_answers(prompts, answers)
    for (total, per), (total_alone, per_alone) in zip(together, alone(runner, prompts, answers)):
        assert per == pytest.approx(per_alone, abs=1e-5) and total == pytest.approx(total_alone, abs=1e-5)


def test_answers_beyond_one_row_spill_into_blocks(runner, monkeypatch):
    monkeypatch.setattr(tree_packing, "MIN_WIDTH", 16)
    prompts = ["Paris is the capital of"] * 6
    answers = [" France .", " Germany and Italy .", " Spain .", " Japan .", " Finland .", " the company Nokia ."]
    pairs = runner.encoder.continuations(prompts, answers)
    tree = tree_packing.build([c for c, _ in pairs], [a for _, a in pairs], runner.pad_id)
    assert tree.input_ids.shape[0] > 1  # the prompt was written again in another row
    got = tree_packing.answer_logprobs(runner.network, tree, [a for _, a in pairs], runner.device)
    for per, (_, per_alone) in zip(got, alone(runner, prompts, answers)):
        assert per == pytest.approx(per_alone, abs=1e-5)
