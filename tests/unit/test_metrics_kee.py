"""MAPLE KEE metrics on hand-made tables; expected values computed by hand in the comments."""

from __future__ import annotations

import itertools

import pytest
from scipy.stats import kendalltau

from kbench.metrics import kee

# Six items. base: a,b,c right; d,e,f wrong. technique: a,d right; rest wrong.
BASE = {"a": True, "b": True, "c": True, "d": False, "e": False, "f": False}
TECH = {"a": True, "b": False, "c": False, "d": True, "e": False, "f": False}


def test_accuracy_gain_loss_by_hand():
    assert kee.accuracy(BASE) == pytest.approx(3 / 6)
    assert kee.accuracy(TECH) == pytest.approx(2 / 6)
    assert kee.gain(BASE, TECH) == pytest.approx(1 / 3)   # F_base={d,e,f}, recovered {d}
    assert kee.loss(BASE, TECH) == pytest.approx(2 / 3)   # S_base={a,b,c}, broken {b,c}


def test_empty_denominators_are_undefined():
    all_right = {"a": True, "b": True}
    all_wrong = {"a": False, "b": False}
    assert kee.gain(all_right, all_wrong) is None         # no base failures
    assert kee.loss(all_wrong, all_right) is None         # no base successes
    assert kee.accuracy({}) is None


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
    assert result.n == 3
    assert result.improved == pytest.approx(1 / 3)   # e: 3 < 10
    assert result.tied == pytest.approx(1 / 3)       # f: 4 == 4
    assert result.worsened == pytest.approx(1 / 3)   # g: 20 > 7


def test_prs_with_no_eligible_items_is_undefined():
    result = kee.prs({"a": False}, {"a": False}, {"a": 1}, {"a": 2})
    assert result.n == 0 and result.improved is None and result.tied is None and result.worsened is None


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
    assert sgr == pytest.approx(1 / 2) and dgr == pytest.approx(1 / 2)
    assert kee.gain_rates(set(), set(), method) == (None, None)
    with pytest.raises(ValueError, match="fewer than k"):
        kee.partition_failures(base, samples, k=5)


@pytest.mark.parametrize("x,y", [
    ([1, 2, 3, 4], [1, 2, 3, 4]),
    ([1, 2, 3, 4], [4, 3, 2, 1]),
    ([0.1, 0.2, 0.2, 0.5, 0.3], [0.3, 0.2, 0.25, 0.9, 0.1]),
    ([1, 1, 2, 2, 3], [1, 2, 1, 2, 3]),
    ([5, 3, 3, 3, 1, 0], [2, 2, 2, 7, 1, 1]),
])
def test_kendall_tau_b_matches_scipy(x, y):
    expected = kendalltau(x, y, variant="b").statistic
    assert kee.kendall_tau_b(x, y) == pytest.approx(expected)


def test_kendall_tau_b_by_hand_and_constant_input():
    # pairs of [1,2,3] vs [1,3,2]: (0,1) C, (0,2) C, (1,2) D -> (2-1)/3
    assert kee.kendall_tau_b([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert kee.kendall_tau_b([1, 1, 1], [1, 2, 3]) is None


def test_kendall_tau_b_random_against_scipy():
    values = [0, 1, 2]
    for x in itertools.islice(itertools.product(values, repeat=4), 0, 81, 7):
        y = [(3 * v + i) % 4 for i, v in enumerate(x)]
        expected = kendalltau(x, y, variant="b").statistic
        got = kee.kendall_tau_b(list(x), y)
        if expected != expected:  # scipy gives NaN where we give None
            assert got is None
        else:
            assert got == pytest.approx(expected)


def test_ranking_stability_against_reference_k():
    scores = {1: {"caa": 0.1, "recite": 0.3, "temp0.7": 0.2},
              20: {"caa": 0.1, "recite": 0.4, "temp0.7": 0.3},
              30: {"caa": 0.5, "recite": 0.4, "temp0.7": None}}
    out = kee.ranking_stability(scores, reference_k=20)
    assert out[1] == pytest.approx(1.0) and out[20] == pytest.approx(1.0)
    assert out[30] == pytest.approx(-1.0)   # caa/recite swap; temp0.7 undefined at K=30 is left out
    with pytest.raises(ValueError, match="reference K"):
        kee.ranking_stability({1: {}}, reference_k=20)
