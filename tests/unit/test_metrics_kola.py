"""KoLA standardisation on a hand-computed matrix."""

from __future__ import annotations

import math

import pytest

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
