"""Uncertainty helpers against hand-computed values and scipy's independent implementations."""

import math

import pytest
from scipy.stats import binomtest

from kbench.metrics.uncertainty import (bin_differences, binomial_two_sided, difference_paired, difference_unpaired,
                                        format_estimate, macro_mean, mcnemar, mean, pairwise_mcnemar, proportion, sign_test,
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


def test_macro_mean_weights_groups_equally_and_resamples_groups_then_items():
    groups = {"P1": [1.0] * 90 + [0.0] * 10, "P2": [0.0] * 5}
    estimate = macro_mean(groups)
    assert estimate["value"] == pytest.approx(0.45) and estimate["n"] == 105 and estimate["groups"] == 2
    assert estimate["method"].startswith("two-stage")
    # two relations: a replicate may draw P1 twice (about 0.9) or P2 twice (0), so the interval holds
    # the spread between the relations, not only the items within them
    assert estimate["ci_low"] == 0.0 and 0.85 <= estimate["ci_high"] <= 1.0


def test_macro_mean_with_one_item_per_relation_is_not_zero_width():
    # the 20-item extraction report: 20 relations of one fact each gave 0.077 [0.077, 0.077]
    groups = {f"P{i}": [1.0 if i < 2 else 0.0] for i in range(20)}
    estimate = macro_mean(groups)
    assert estimate["value"] == pytest.approx(0.1)
    assert estimate["ci_low"] <= 0.1 < estimate["ci_high"] and estimate["ci_high"] - estimate["ci_low"] > 0.1
    assert macro_mean(groups, seed=0) == estimate  # seeded


def test_macro_mean_of_all_zero_or_all_one_hits_gets_the_wilson_interval():
    for hit in (0.0, 1.0):
        estimate = macro_mean({f"P{i}": [hit] * (1 + i % 3) for i in range(10)})
        assert estimate["value"] == hit and estimate["interval"] == "wilson"
        assert (estimate["ci_low"], estimate["ci_high"]) == wilson(int(hit) * estimate["n"], estimate["n"])
        assert estimate["ci_high"] > estimate["ci_low"]


def test_macro_mean_of_equal_non_binary_values_stays_zero_width():
    # every item of every relation has the same share: the data fix the value
    estimate = macro_mean({"P1": [0.5, 0.5], "P2": [0.5]})
    assert estimate["ci_low"] == estimate["ci_high"] == 0.5


def test_format_marks_small_cells():
    assert format_estimate(proportion(3, 10)).endswith("*")
    assert not format_estimate(proportion(30, 100)).endswith("*")


def test_sign_test_is_the_exact_binomial_without_ties():
    got = sign_test(3, 12)
    assert got["n"] == 15 and got["p_value"] == pytest.approx(binomtest(3, 15, 0.5).pvalue)
    assert sign_test(0, 0)["p_value"] == 1.0 and sign_test(5, 5)["p_value"] == 1.0


def test_newcombe_unpaired_difference_matches_newcombes_worked_example():
    # Newcombe (1998), Stat Med 17:873, example (a): 56/70 - 48/80, method 10 -> 0.0524 to 0.3339
    got = difference_unpaired(56, 70, 48, 80)
    assert got["value"] == pytest.approx(0.2)
    assert (got["ci_low"], got["ci_high"]) == (pytest.approx(0.0524, abs=1e-4), pytest.approx(0.3339, abs=1e-4))
    assert got["interval"] == "newcombe" and got["paired"] is False and (got["n_first"], got["n_second"]) == (70, 80)
    assert difference_unpaired(0, 0, 3, 5)["value"] is None
    edge = difference_unpaired(5, 5, 0, 5)
    assert edge["value"] == 1.0 and 0 < edge["ci_low"] < 1 and edge["ci_high"] == 1.0


def test_newcombe_paired_difference_against_an_independent_computation():
    import numpy as np

    first = {f"s{i}": i % 3 != 0 for i in range(40)}
    second = {f"s{i}": i % 4 == 0 or i % 3 == 1 for i in range(40)}
    second["extra"] = True
    got = difference_paired(first, second)
    x = np.array([first[f"s{i}"] for i in range(40)], float)
    y = np.array([second[f"s{i}"] for i in range(40)], float)
    a, d = int(((x == 1) & (y == 1)).sum()), int(((x == 0) & (y == 0)).sum())
    b, c = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
    phi = max(a * d - b * c - 20, 0) / math.sqrt((a + b) * (c + d) * (a + c) * (b + d))   # Newcombe's corrected phi (n/2 = 20)
    assert a * d - b * c > 20 and phi < np.corrcoef(x, y)[0, 1]
    ci1 = binomtest(int(x.sum()), 40).proportion_ci(method="wilson")
    ci2 = binomtest(int(y.sum()), 40).proportion_ci(method="wilson")
    p1, p2 = x.mean(), y.mean()
    low = p1 - p2 - math.sqrt((p1 - ci1.low) ** 2 - 2 * phi * (p1 - ci1.low) * (ci2.high - p2) + (ci2.high - p2) ** 2)
    high = p1 - p2 + math.sqrt((ci1.high - p1) ** 2 - 2 * phi * (ci1.high - p1) * (p2 - ci2.low) + (p2 - ci2.low) ** 2)
    assert got["value"] == pytest.approx(p1 - p2) and got["n"] == 40 and got["only_second"] == 1
    assert (got["ci_low"], got["ci_high"]) == (pytest.approx(low, abs=1e-6), pytest.approx(high, abs=1e-6))
    assert got["interval"] == "newcombe-paired" and got["paired"] is True
    same = difference_paired(first, first)
    assert same["value"] == 0 and same["ci_low"] < 0 < same["ci_high"]   # no discordant item: still not zero-width
    assert same["ci_high"] - same["ci_low"] < got["ci_high"] - got["ci_low"]  # perfectly correlated: narrower
    assert difference_paired({"a": True}, {"b": True})["value"] is None


def test_pairwise_mcnemar_covers_every_pair_with_holm_adjustment():
    systems = {"base": {"a": True, "b": False, "c": False},
               "x": {"a": True, "b": True, "c": True},
               "y": {"a": False, "b": False, "c": True}}
    tests = pairwise_mcnemar(systems)
    assert [(t["first"], t["second"]) for t in tests] == [("base", "x"), ("base", "y"), ("x", "y")]
    assert tests[0] == {"first": "base", "second": "x", **mcnemar(systems["base"], systems["x"]), "p_holm": tests[0]["p_holm"]}
    ps = sorted(t["p_value"] for t in tests)
    holm = sorted(t["p_holm"] for t in tests)
    assert holm[0] == pytest.approx(min(1, 3 * ps[0])) and all(h >= p for h, p in zip(holm, ps))
    assert holm == sorted(holm) and max(holm) <= 1


def test_bin_differences_are_unpaired_and_skip_missing_bins_and_means():
    per_bin = {"head": {"acc": proportion(8, 10), "logp": mean([1.0, 2.0])},
               "tail": {"acc": proportion(2, 10), "logp": mean([0.5])}}
    got = bin_differences(per_bin)
    assert list(got) == ["head - tail"]   # no torso bin
    assert got["head - tail"] == {"acc": difference_unpaired(8, 10, 2, 10)}
