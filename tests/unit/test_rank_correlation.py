"""Kendall's tau-b against scipy's, by hand, and where it is undefined."""

from __future__ import annotations

import itertools

import pytest
from scipy.stats import kendalltau

from kbench.metrics.rank_correlation import kendall_tau_b


@pytest.mark.parametrize("x,y", [
    ([1, 2, 3, 4], [1, 2, 3, 4]),
    ([1, 2, 3, 4], [4, 3, 2, 1]),
    ([0.1, 0.2, 0.2, 0.5, 0.3], [0.3, 0.2, 0.25, 0.9, 0.1]),
    ([1, 1, 2, 2, 3], [1, 2, 1, 2, 3]),
    ([5, 3, 3, 3, 1, 0], [2, 2, 2, 7, 1, 1]),
])
def test_kendall_tau_b_matches_scipy(x, y):
    expected = kendalltau(x, y, variant="b").statistic
    assert kendall_tau_b(x, y) == pytest.approx(expected)


def test_kendall_tau_b_by_hand_and_constant_input():
    # pairs of [1,2,3] vs [1,3,2]: (0,1) C, (0,2) C, (1,2) D -> (2-1)/3
    assert kendall_tau_b([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert kendall_tau_b([1, 1, 1], [1, 2, 3]) is None


def test_kendall_tau_b_random_against_scipy():
    values = [0, 1, 2]
    for x in itertools.islice(itertools.product(values, repeat=4), 0, 81, 7):
        y = [(3 * v + i) % 4 for i, v in enumerate(x)]
        expected = kendalltau(x, y, variant="b").statistic
        got = kendall_tau_b(list(x), y)
        if expected != expected:  # scipy gives NaN where we give None
            assert got is None
        else:
            assert got == pytest.approx(expected)
