"""The sampling scheme (temperature, top-k, top-p) of the temperature baselines and of the
shallow/deep partition: `decoding.truncate` by hand, and through the runner on the tiny Llama."""

from __future__ import annotations


import pytest
import torch

from kbench.tasks.kee.techniques.temperature import sampling_intervention
from kbench.models.decoding import sample_tokens, truncate
from kbench.models.loading import load_model
from kbench.models.runner import ModelRunner

INF = float("-inf")
PROBS = [0.5, 0.3, 0.15, 0.05]


def _kept(scores) -> list[bool]:
    return [s != INF for s in scores.tolist()[0]]


def test_top_k_keeps_the_k_highest_and_their_ties():
    scores = torch.tensor([PROBS]).log()
    assert _kept(truncate(scores, 1.0, top_k=2)) == [True, True, False, False]
    assert _kept(truncate(torch.tensor([[1.0, 1.0, 0.0]]), 1.0, top_k=1)) == [True, True, False]
    assert torch.equal(truncate(scores, 1.0), scores)   # no truncation asked: unchanged


def test_top_p_keeps_the_smallest_nucleus_of_the_tempered_distribution():
    scores = torch.tensor([PROBS]).log()
    # T = 1: mass before each token 0, .5, .8, .95 -> top_p .7 keeps 2 tokens, .85 keeps 3
    assert _kept(truncate(scores, 1.0, top_p=0.7)) == [True, True, False, False]
    assert _kept(truncate(scores, 1.0, top_p=0.85)) == [True, True, True, False]
    # T = 2: p ∝ √p = [.7071, .5477, .3873, .2236] / 1.8657 = [.3790, .2936, .2076, .1198];
    # mass before: 0, .3790, .6726, .8802 -> top_p .7 keeps 3 tokens (it kept 2 at T = 1)
    assert _kept(truncate(scores, 2.0, top_p=0.7)) == [True, True, True, False]
    # the top token always stays, however small top_p
    assert _kept(truncate(scores, 1.0, top_p=0.01)) == [True, False, False, False]
    # top-k first, then top-p on what is left: top_k 3 renormalises to [.5, .3, .15] / .95
    # = [.5263, .3158, .1579]; mass before 0, .5263, .8421 -> top_p .8 keeps 2
    assert _kept(truncate(scores, 1.0, top_k=3, top_p=0.8)) == [True, True, False, False]


def test_truncated_sampling_draws_the_renormalised_nucleus():
    scores = truncate(torch.tensor([PROBS]).log(), 1.0, top_p=0.85)     # [.5, .3, .15] / .95
    grid = (torch.arange(950) + 0.5) / 950
    counts = torch.bincount(sample_tokens(scores.expand(950, 4), 1.0, grid), minlength=4).tolist()
    assert counts == [500, 300, 150, 0]


@pytest.fixture(scope="module")
def runner(tiny_causal_dir):
    return ModelRunner(load_model(str(tiny_causal_dir)))


def test_top_k_one_sampling_is_greedy_decoding(runner):
    prompts = ["Paris is the capital of", "Marie Curie was born in"]
    greedy = runner.generate(prompts, max_new_tokens=5)
    plain = runner.sample(prompts, k=3, temperature=1.5, seed=7, max_new_tokens=5)
    top1 = runner.sample(prompts, k=3, temperature=1.5, seed=7, max_new_tokens=5,
                         intervention=sampling_intervention(1.5, 1, 1.0))
    assert top1 == [[text] * 3 for text in greedy]
    assert plain != top1                        # a random model at T = 1.5 does not sample greedily
    assert sampling_intervention(0.7, None, 1.0) is None   # plain temperature: no intervention, same cache keys
    assert sampling_intervention(0.7, 40, 1.0).key != sampling_intervention(0.7, 40, 0.9).key
