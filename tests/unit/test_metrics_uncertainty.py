"""Uncertainty helpers against hand-computed values and scipy's independent implementations."""

import math

import pytest
from scipy.stats import binomtest

from kbench.metrics.uncertainty import (binomial_two_sided, format_estimate, macro_mean, mcnemar, mean, proportion,
                                        wilson)


def test_wilson_matches_the_reference_formula_by_hand():
    # k = 7, n = 20, z = 1.959964: p = 0.35; z^2 = 3.841459
    low, high = wilson(7, 20)
    z2 = 1.959964 ** 2
    centre = (0.35 + z2 / 40) / (1 + z2 / 20)
    half = 1.959964 * math.sqrt(0.35 * 0.65 / 20 + z2 / 1600) / (1 + z2 / 20)
    assert low == pytest.approx(centre - half, abs=1e-12) and high == pytest.approx(centre + half, abs=1e-12)
    assert (round(low, 4), round(high, 4)) == (0.1812, 0.5671)


def test_wilson_agrees_with_scipy_and_handles_the_edges():
    for k, n in [(0, 10), (10, 10), (3, 200), (150, 300)]:
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-6)
    assert wilson(0, 0) is None
    undefined = proportion(0, 0)
    assert undefined["value"] is None and undefined["ci_low"] is None and format_estimate(undefined) == "undefined"


def test_exact_mcnemar_matches_the_binomial_test():
    for b, c in [(0, 0), (1, 0), (5, 12), (30, 31), (0, 9)]:
        expected = 1.0 if b + c == 0 else binomtest(min(b, c), b + c, 0.5).pvalue
        assert binomial_two_sided(b, b + c) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_pairs_only_shared_items():
    first = {"a": True, "b": True, "c": False, "d": False, "x": True}
    second = {"a": True, "b": False, "c": True, "d": True, "y": False}
    result = mcnemar(first, second)
    assert (result["n_shared"], result["b"], result["c"], result["only_first"], result["only_second"]) == (4, 1, 2, 1, 1)
    assert result["p_value"] == pytest.approx(1.0)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = [float(i % 7) for i in range(100)]
    one, two = mean(values, seed=3), mean(values, seed=3)
    assert one == two and one["ci_low"] < one["value"] < one["ci_high"]
    assert one["resamples"] == 1000 and one["seed"] == 3
    assert mean(values, seed=4)["ci_low"] != one["ci_low"] or mean(values, seed=4)["ci_high"] != one["ci_high"]


def test_macro_mean_weights_groups_equally_and_resamples_within_them():
    groups = {"P1": [1.0] * 90 + [0.0] * 10, "P2": [0.0] * 5}
    estimate = macro_mean(groups)
    assert estimate["value"] == pytest.approx(0.45) and estimate["n"] == 105 and estimate["groups"] == 2
    # P2 is all zeros in every replicate, so the interval stays within [0, 0.5]
    assert 0.0 <= estimate["ci_low"] <= 0.45 <= estimate["ci_high"] <= 0.5


def test_format_marks_small_cells():
    assert format_estimate(proportion(3, 10)).endswith("*")
    assert not format_estimate(proportion(30, 100)).endswith("*")
