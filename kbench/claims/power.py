"""Power and sample size for the claims' tests, by the normal approximation (textbook formulas,
e.g. Fleiss, Levin & Paik, "Statistical Methods for Rates and Proportions", 3rd ed., §4.2 and
§2.5; Chow, Shao & Wang, "Sample Size Calculations in Clinical Research", §4.1-4.2).

- Two proportions p1, p2 with n1, n2 items (unpaired, two-sided alpha): detectable when
  z(1 − alpha/2)·sqrt(p̄(1 − p̄)(1/n1 + 1/n2)) + z(power)·sqrt(p1(1 − p1)/n1 + p2(1 − p2)/n2) ≤ |p1 − p2|,
  p̄ the pooled rate (n1·p1 + n2·p2)/(n1 + n2). A paired design (McNemar on the same items) is
  planned with the same formula: the items' correlation only narrows the paired test, so the
  unpaired n is an upper bound.
- One proportion p1 against a reference p0: z(1 − alpha/2)·sqrt(p0(1 − p0)/n) + z(power)·sqrt(p1(1 − p1)/n) ≤ |p1 − p0|.
- An interval claim (equivalence, non-superiority): the 95% interval's half-width
  z(0.975)·sqrt(p1(1 − p1)/n1 + p2(1 − p2)/n2) must fit inside the margin (at a true difference
  of 0, the interval then lies inside ±margin about as often as not; a larger n, more often).
- Across models: an exact one-sided sign test reaches alpha only with M models where 0.5^M < alpha.
The exact tests kbench runs (Fisher, binomial, McNemar) are a little more conservative than these
approximations at small n.
"""

from __future__ import annotations

import math
from statistics import NormalDist

ALPHA = 0.05
POWER = 0.8


def z(quantile: float) -> float:
    return NormalDist().inv_cdf(quantile)


def two_proportions_detectable(p1: float, p2: float, n1: float, n2: float, alpha: float = ALPHA, power: float = POWER) -> bool:
    if n1 <= 0 or n2 <= 0:
        return False
    pooled = (n1 * p1 + n2 * p2) / (n1 + n2)
    null = z(1 - alpha / 2) * math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    alternative = z(power) * math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
    return null + alternative <= abs(p1 - p2)


def one_proportion_detectable(p1: float, p0: float, n: float, alpha: float = ALPHA, power: float = POWER) -> bool:
    if n <= 0:
        return False
    spread = z(1 - alpha / 2) * math.sqrt(p0 * (1 - p0)) + z(power) * math.sqrt(p1 * (1 - p1))
    return spread / math.sqrt(n) <= abs(p1 - p0)


def n_two_proportions(p1: float, p2: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Items per group (equal groups) to detect p1 vs p2; None when p1 = p2."""
    if p1 == p2:
        return None
    pooled = (p1 + p2) / 2
    root = z(1 - alpha / 2) * math.sqrt(2 * pooled * (1 - pooled)) + z(power) * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))
    return math.ceil(root**2 / (p1 - p2) ** 2)


def n_one_proportion(p1: float, p0: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Items to detect a proportion p1 against the reference p0; None when p1 = p0."""
    if p1 == p0:
        return None
    root = z(1 - alpha / 2) * math.sqrt(p0 * (1 - p0)) + z(power) * math.sqrt(p1 * (1 - p1))
    return math.ceil(root**2 / (p1 - p0) ** 2)


def _smallest(detectable, start: float) -> float | None:
    """The smallest d in (0, 1 − start] with detectable(d), by bisection (detectable grows with d)."""
    top = 1 - start
    if top <= 0 or not detectable(top):
        return None
    low, high = 0.0, top
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (low, middle) if detectable(middle) else (middle, high)
    return high


def detectable_two(rate: float, n1: float, n2: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest difference d that n1 and n2 items detect when one group's rate is `rate` and the
    other's `rate` + d (toward 0.5 first: `rate` above 0.5 is mirrored); None when no d does."""
    base = min(rate, 1 - rate)
    return _smallest(lambda d: two_proportions_detectable(base + d, base, n1, n2, alpha, power), base)


def detectable_one(reference: float, n: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest departure d from `reference` that n items detect (toward 0.5 first)."""
    base = min(reference, 1 - reference)
    return _smallest(lambda d: one_proportion_detectable(base + d, base, n, alpha, power), base)


def half_width(p1: float, p2: float | None, n1: float, n2: float | None = None, level: float = 0.95) -> float | None:
    """The normal interval's half-width of p1 − p2 (p2 None: of p1 alone)."""
    if n1 <= 0 or (p2 is not None and (n2 or 0) <= 0):
        return None
    variance = p1 * (1 - p1) / n1 + (p2 * (1 - p2) / n2 if p2 is not None and n2 else 0.0)
    return z(1 - (1 - level) / 2) * math.sqrt(variance)


def n_for_margin(p1: float, p2: float | None, margin: float, level: float = 0.95) -> int:
    """Items per group for the interval's half-width to fit inside `margin` (p2 None: one proportion)."""
    variance = p1 * (1 - p1) + (p2 * (1 - p2) if p2 is not None else 0.0)
    return math.floor(z(1 - (1 - level) / 2) ** 2 * variance / margin**2) + 1


def sign_test_models(alpha: float = ALPHA) -> int:
    """The fewest models with which every one agreeing gives a one-sided sign test p (0.5^M) below alpha."""
    return math.floor(math.log(alpha) / math.log(0.5)) + 1


def smallest_rank_p(points: int) -> float:
    """The smallest two-sided exact permutation p of a rank correlation over `points` (2 / points!)."""
    return min(1.0, 2 / math.factorial(points)) if points >= 2 else 1.0


def n_to_decide(estimate: dict, direction: str, margin: float | None, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """The n at which an observed difference would decide, scaled from its own 95% interval (the
    standard error shrinks as 1/sqrt(n)): a directional claim, 80% power at `alpha` (two-sided);
    an interval claim (equivalence, non-superiority), the half-width that fits between the
    estimate and the margin. None when the estimate cannot tell (no interval, a zero-width one,
    no difference, or an estimate on the margin's wrong side, which no n brings inside)."""
    value, low, high, n = estimate.get("value"), estimate.get("ci_low"), estimate.get("ci_high"), estimate.get("n")
    if value is None or low is None or high is None or not n or high <= low:
        return None
    half = (high - low) / 2
    if direction in ("greater", "less"):
        if value == 0:
            return None
        standard_error = half / z(0.975)
        return math.ceil(n * ((z(1 - alpha / 2) + z(power)) * standard_error / abs(value)) ** 2)
    room = margin - (abs(value) if direction == "equivalent" else value)
    return math.ceil(n * (half / room) ** 2) if room > 0 else None
