"""MAPLE KEE metrics on hand-made tables; expected values computed by hand in the comments."""

from __future__ import annotations

import itertools

import pytest
from scipy.stats import kendalltau

from kbench.tasks.kee import metrics as kee
from kbench.metrics.uncertainty import proportion

# Six items. base: a,b,c right; d,e,f wrong. technique: a,d right; rest wrong.
BASE = {"a": True, "b": True, "c": True, "d": False, "e": False, "f": False}
TECH = {"a": True, "b": False, "c": False, "d": True, "e": False, "f": False}


def test_accuracy_gain_loss_by_hand():
    assert kee.accuracy(BASE)["value"] == pytest.approx(3 / 6)
    assert kee.accuracy(TECH)["value"] == pytest.approx(2 / 6)
    assert kee.gain(BASE, TECH) == proportion(1, 3)   # F_base={d,e,f}, recovered {d}
    assert kee.loss(BASE, TECH) == proportion(2, 3)   # S_base={a,b,c}, broken {b,c}


def test_empty_denominators_are_undefined():
    all_right = {"a": True, "b": True}
    all_wrong = {"a": False, "b": False}
    assert kee.gain(all_right, all_wrong)["value"] is None   # no base failures
    assert kee.loss(all_wrong, all_right)["value"] is None   # no base successes
    assert kee.accuracy({})["value"] is None


def test_mismatched_items_are_an_error():
    with pytest.raises(ValueError, match="different items"):
        kee.gain({"a": True}, {"b": True})


def test_prs_counts_only_unflipped_failures_not_ranked_first():
    base = {"a": True, "d": False, "e": False, "f": False, "g": False, "h": False, "i": False}
    tech = {"a": False, "d": True, "e": False, "f": False, "g": False, "h": False, "i": False}
    base_rank = {"a": 1, "d": 5, "e": 10, "f": 4, "g": 7, "h": 1, "i": 3}
    tech_rank = {"a": 9, "d": 1, "e": 3, "f": 4, "g": 20, "h": 6, "i": 1}
    # 0→0 items: e,f,g,h,i; h (base rank 1) and i (technique rank 1) are dropped -> e,f,g
    result = kee.prs(base, tech, base_rank, tech_rank)
    assert result["n"] == 3
    assert result["improved"] == proportion(1, 3)   # e: 3 < 10
    assert result["tied"] == proportion(1, 3)       # f: 4 == 4
    assert result["worsened"] == proportion(1, 3)   # g: 20 > 7
    assert result["sign_test"]["plus"] == 1 and result["sign_test"]["minus"] == 1 and result["sign_test"]["p_value"] == 1.0


def test_prs_with_no_eligible_items_is_undefined():
    result = kee.prs({"a": False}, {"a": False}, {"a": 1}, {"a": 2})
    assert result["n"] == 0 and all(result[k]["value"] is None for k in ("improved", "tied", "worsened"))
    assert result["sign_test"]["p_value"] == 1.0


def test_shallow_deep_partition_and_gain_rates():
    base = {"a": True, "d": False, "e": False, "f": False, "g": False}
    samples = {"a": [True] * 4,
               "d": [False, True, False, False],    # shallow at k>=2
               "e": [False, False, False, True],    # shallow only at k=4
               "f": [False] * 4,                     # deep
               "g": [True, False, False, False]}    # shallow at every k
    shallow, deep = kee.partition_failures(base, samples, k=2)
    assert shallow == {"d", "g"} and deep == {"e", "f"}
    shallow4, deep4 = kee.partition_failures(base, samples, k=4)
    assert shallow4 == {"d", "e", "g"} and deep4 == {"f"}
    method = {"a": True, "d": True, "e": False, "f": True, "g": False}
    sgr, dgr = kee.gain_rates(shallow, deep, method)
    assert sgr == proportion(1, 2) and dgr == proportion(1, 2)
    assert [e["value"] for e in kee.gain_rates(set(), set(), method)] == [None, None]
    with pytest.raises(ValueError, match="fewer than k"):
        kee.partition_failures(base, samples, k=5)
    # the shallow failures at each K of the sweep: the partition's shallow set at that K, counted
    counts = kee.shallow_counts(base, samples, sweep_max=4)
    assert counts == {str(k): len(kee.partition_failures(base, samples, k)[0]) for k in range(1, 5)}
    assert counts == {"1": 1, "2": 2, "3": 2, "4": 3}


def test_ranking_stability_against_reference_k():
    scores = {1: {"caa": 0.1, "recite": 0.3, "temp0.7": 0.2},
              20: {"caa": 0.1, "recite": 0.4, "temp0.7": 0.3},
              30: {"caa": 0.5, "recite": 0.4, "temp0.7": None}}
    out = kee.ranking_stability(scores, reference_k=20)
    assert out[1] == pytest.approx(1.0) and out[20] == pytest.approx(1.0)
    assert out[30] == pytest.approx(-1.0)   # caa/recite swap; temp0.7 undefined at K=30 is left out
    with pytest.raises(ValueError, match="reference K"):
        kee.ranking_stability({1: {}}, reference_k=20)


def _stability_case(n_items=12, methods=("a", "b", "c")):
    """Items i0..: base wrong on all; the first correct sample of item n is at n % 5 (5 = none)."""
    base = {f"i{n}": n % 6 == 0 for n in range(n_items)}
    samples = {f"i{n}": [s == n % 5 and n % 7 != 3 for s in range(5)] for n in range(n_items)}
    correct = {m: {f"i{n}": (n * (j + 2)) % 3 == 0 for n in range(n_items)} for j, m in enumerate(methods)}
    return base, samples, correct


def test_ranking_stability_intervals_value_is_the_plain_tau_and_the_interval_brackets_it():
    base, samples, correct = _stability_case()
    got = kee.ranking_stability_intervals(base, samples, correct, sweep_max=5, reference_k=3, seed=1, resamples=200)
    for rate, index in (("sgr", 0), ("dgr", 1)):
        points = {k: {m: kee.gain_rates(*kee.partition_failures(base, samples, k), correct[m])[index]["value"] for m in correct}
                  for k in range(1, 6)}
        plain = kee.ranking_stability(points, reference_k=3)
        for k in range(1, 6):
            estimate = got[rate][str(k)]
            assert estimate["value"] == plain[k]
            assert estimate["n"] == sum(not ok for ok in base.values())
            assert estimate["seed"] == 1 and estimate["resamples"] == 200 and estimate["interval"] == "bootstrap"
            if estimate["ci_low"] is not None:
                assert -1 <= estimate["ci_low"] <= estimate["ci_high"] <= 1
    assert got["sgr"]["3"]["ci_low"] == got["sgr"]["3"]["ci_high"] == 1.0   # K = reference: tau is 1 in every replicate
    again = kee.ranking_stability_intervals(base, samples, correct, sweep_max=5, reference_k=3, seed=1, resamples=200)
    assert again == got   # seeded: bit-identical


def test_ranking_stability_intervals_replicate_tau_matches_the_pure_function():
    """One resample drawn by hand: the vectorised tau equals kendall_tau_b of the resampled rates."""
    import numpy as np

    base, samples, correct = _stability_case()
    failures = sorted(i for i, ok in base.items() if not ok)
    rng = np.random.default_rng(5)
    draw = np.bincount(rng.integers(0, len(failures), len(failures)), minlength=len(failures))
    got = kee.ranking_stability_intervals(base, samples, correct, sweep_max=5, reference_k=5, seed=5, resamples=1)
    expanded = [f for f, c in zip(failures, draw) for _ in range(c)]
    renamed = {f"{f}#{n}": f for n, f in enumerate(expanded)}
    b = {r: False for r in renamed}
    s = {r: samples[f] for r, f in renamed.items()}
    c = {m: {r: correct[m][f] for r, f in renamed.items()} for m in correct}
    points = {k: {m: kee.gain_rates(*kee.partition_failures(b, s, k), c[m])[0]["value"] for m in c} for k in range(1, 6)}
    tau = kee.ranking_stability(points, reference_k=5)[2]
    if tau is None:
        assert got["sgr"]["2"]["ci_low"] is None and got["sgr"]["2"]["undefined_resamples"] == 1
    else:
        assert got["sgr"]["2"]["ci_low"] == pytest.approx(tau)


def test_ranking_stability_intervals_without_failures_or_methods_are_undefined():
    got = kee.ranking_stability_intervals({"a": True}, {"a": [True]}, {"m": {"a": True}}, 1, 1, resamples=10)
    assert got["sgr"]["1"]["value"] is None and got["sgr"]["1"]["ci_low"] is None
    assert got["sgr"]["1"]["undefined_resamples"] == 10 and got["sgr"]["1"]["n"] == 0


def test_each_reading_of_recovered_by_hand():
    samples = [False, True, True, False]   # first wrong; 2 of 4 correct; 2 of the first 3
    assert [kee.recovered(samples, 4, r) for r in kee.READINGS] == [True, False, False]   # 2 of 4 is no majority
    assert [kee.recovered(samples, 3, r) for r in kee.READINGS] == [True, True, False]    # 2 of 3 is one
    assert [kee.recovered(samples, 1, r) for r in kee.READINGS] == [False, False, False]
    assert all(kee.recovered(True, 4, r) for r in kee.READINGS)   # an answer reads the same under each
    with pytest.raises(ValueError, match="unknown reading"):
        kee.recovered(samples, 2, "best-of-k")
    with pytest.raises(ValueError, match="fewer than K"):
        kee.recovered(samples, 5, "one-sample")


def test_reading_rates_differ_as_the_readings_do():
    # shallow s1, s2; deep d1, d2 (the partition comes from seed-A samples, these are seed-B)
    seed_b = {"s1": [False, True, False], "s2": [True, True, False], "d1": [False, False, True], "d2": [False] * 3}
    rates = kee.reading_rates({"s1", "s2"}, {"d1", "d2"}, seed_b, k=3)
    assert list(rates) == list(kee.READINGS)
    assert (rates["any-of-k"]["sgr"], rates["any-of-k"]["dgr"]) == (proportion(2, 2), proportion(1, 2))
    assert (rates["majority-of-k"]["sgr"], rates["majority-of-k"]["dgr"]) == (proportion(1, 2), proportion(0, 2))
    assert (rates["one-sample"]["sgr"], rates["one-sample"]["dgr"]) == (proportion(1, 2), proportion(0, 2))


def test_prs_undefined_has_no_items_and_says_why():
    block = kee.prs_undefined(kee.SAMPLING_PRS_UNDEFINED)
    assert block["n"] == 0 and all(block[k]["value"] is None for k in ("improved", "tied", "worsened"))
    assert "neither the prompt nor the weights" in block["undefined"]
