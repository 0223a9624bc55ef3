"""KoLA standardisation on a hand-computed matrix; Rouge-L self-contrast against rouge-score itself."""

from __future__ import annotations

import json
import math

import pytest
from rouge_score import rouge_scorer

from kbench.metrics.rouge import rouge_l_f1, self_contrast_score
from kbench.metrics.standardize import standardized_scores, z_scores


def test_z_scores_use_population_std():
    # task a: 1, 2, 3 -> mean 2, population std sqrt(2/3)
    z = z_scores({"m1": {"a": 1}, "m2": {"a": 2}, "m3": {"a": 3}})
    s = math.sqrt(2 / 3)
    assert z["m1"]["a"] == pytest.approx(-1 / s)
    assert z["m2"]["a"] == pytest.approx(0.0)
    assert z["m3"]["a"] == pytest.approx(1 / s)


def test_standardized_hand_matrix():
    # task a: 10, 20 -> z = -1, +1 ; task b: 0, 0, 90 (m1, m2, m3) -> mean 30, std sqrt(1800) -> z = -0.7071, -0.7071, 1.4142
    # task a has no score for m3
    scores = {"m1": {"a": 10, "b": 0}, "m2": {"a": 20, "b": 0}, "m3": {"a": None, "b": 90}}
    out = standardized_scores(scores)
    low, high = -1.0, math.sqrt(2)
    scale = lambda z: 100 * (z - low) / (high - low)  # noqa: E731
    assert out["m1"]["a"] == pytest.approx(0.0)
    assert out["m2"]["a"] == pytest.approx(scale(1.0))
    assert out["m1"]["b"] == pytest.approx(scale(-1 / math.sqrt(2)))
    assert out["m3"]["b"] == pytest.approx(100.0)
    assert out["m3"]["a"] is None


def test_zero_std_and_flat_scale():
    out = standardized_scores({"m1": {"a": 5}, "m2": {"a": 5}})
    assert out == {"m1": {"a": 50.0}, "m2": {"a": 50.0}}
    # one flat task beside a varying one: the flat task's z is 0, scaled inside the common range
    out = standardized_scores({"m1": {"a": 5, "b": 1}, "m2": {"a": 5, "b": 3}})
    assert out["m1"]["a"] == pytest.approx(50.0)
    assert out["m1"]["b"] == pytest.approx(0.0) and out["m2"]["b"] == pytest.approx(100.0)


def _kola_texts(shared_data):
    texts = []
    for name in ("1-1_2_high_freq_ent_sample.json", "1-3_r_1_simple_sample_sample.json"):
        data = json.loads((shared_data / "kola_samples" / name).read_text())
        for state in data["request_states"]:
            inst = state["instance"]
            texts.append((inst["input"]["text"], inst["references"][0]["output"]["text"]))
    return texts


def test_rouge_l_matches_rouge_score_on_kola_samples(shared_data):
    reference_scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    texts = _kola_texts(shared_data)
    assert len(texts) == 10
    for question, answer in texts:
        completion = f"{question} {answer}"  # a completion that shares words with both
        expected = reference_scorer.score(answer, completion)["rougeL"].fmeasure
        assert rouge_l_f1(completion, answer) == pytest.approx(expected)
        assert rouge_l_f1(answer, completion) == pytest.approx(expected)  # symmetric F1


def test_self_contrast_is_the_mean_of_three_terms(shared_data):
    question, answer = _kola_texts(shared_data)[0]  # "Where was N. R. Narayana Murthy born?" / "Mysore"
    t = "Narayana Murthy was born in Bangalore"
    t_k = "Narayana Murthy was born in Mysore"
    out = self_contrast_score(t, t_k, answer)
    sc = rouge_scorer.RougeScorer(["rougeL"])
    parts = [sc.score(answer, t)["rougeL"].fmeasure, sc.score(t_k, t)["rougeL"].fmeasure, sc.score(answer, t_k)["rougeL"].fmeasure]
    assert out["t_r"] == 0.0
    assert out["t_tk"] == pytest.approx(5 / 6)  # LCS 5 of 6 tokens each side
    assert out["tk_r"] == pytest.approx(parts[2])
    assert out["score"] == pytest.approx(sum(parts) / 3)
