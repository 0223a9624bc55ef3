"""The power formulas of `kbench claims plan` against textbook values (normal approximation, no
continuity correction: Fleiss, Levin & Paik §4.2; Chow, Shao & Wang §4.1)."""

from __future__ import annotations

import pytest

from kbench.claims import power
from kbench.claims.verdicts import MIN_MODELS


def test_normal_quantiles():
    assert power.z(0.975) == pytest.approx(1.959964, abs=1e-6) and power.z(0.8) == pytest.approx(0.841621, abs=1e-6)


def test_two_proportions_sample_size():
    # 10% vs 5%, two-sided alpha 0.05, 80% power: the classic 435 per group (474 with the continuity correction)
    assert power.n_two_proportions(0.10, 0.05) == 435
    assert power.n_two_proportions(0.05, 0.10) == 435 and power.n_two_proportions(0.3, 0.3) is None
    # a stricter alpha (Holm's first step over 10 tests) needs more
    assert power.n_two_proportions(0.10, 0.05, alpha=0.005) > 435


def test_one_proportion_sample_size():
    # 60% against 50%: (1.96·0.5 + 0.8416·sqrt(0.24))² / 0.1² = 193.9 -> 194
    assert power.n_one_proportion(0.6, 0.5) == 194 and power.n_one_proportion(0.5, 0.5) is None


def test_detectable_difference_inverts_the_sample_size():
    n = power.n_two_proportions(0.6, 0.5)
    assert power.detectable_two(0.5, n, n) == pytest.approx(0.1, abs=1e-3)
    assert power.detectable_two(0.5, n - 20, n - 20) > 0.1  # fewer items: a larger difference
    assert power.detectable_one(0.5, power.n_one_proportion(0.6, 0.5)) == pytest.approx(0.1, abs=1e-3)
    assert power.detectable_two(0.5, 2, 2) is None  # no difference within [0, 1] is detectable with 2 items a group


def test_interval_fits_the_margin():
    # 1.96² · (0.25 + 0.25) / 0.05² = 768.3: 769 per group for a ±0.05 margin at 50%
    assert power.n_for_margin(0.5, 0.5, 0.05) == 769
    assert power.half_width(0.5, 0.5, 769, 769) < 0.05 < power.half_width(0.5, 0.5, 768, 768)
    assert power.n_for_margin(0.9, None, 0.05) == 139  # one proportion: 1.96² · 0.09 / 0.05² = 138.3


def test_sign_test_and_rank_correlation_limits():
    assert power.sign_test_models() == MIN_MODELS == 5  # 0.5^5 = 0.031 < 0.05 <= 0.5^4
    assert power.smallest_rank_p(4) == pytest.approx(2 / 24) and power.smallest_rank_p(5) == pytest.approx(2 / 120)
