"""Uncertainty beside every reported number, and paired comparisons (docs/definitions.md,
"Intervals and tests").

Every number that kbench reports is an `Estimate` dict, the one shape that results files, tables,
the report and the card read:

    {"value": 0.42, "n": 200, "ci_low": 0.35, "ci_high": 0.49, "interval": "wilson"}
    {"value": -6.01, "n": 200, "ci_low": -6.4, "ci_high": -5.7, "interval": "bootstrap",
     "seed": 0, "resamples": 1000}

`value` and the bounds are null when n = 0 ("undefined"), never a division error.

- `proportion(k, n)`: accuracy, EM, P@1, Gain, Loss, a PRS share -> a 95% Wilson score interval.
- `mean(values)`: a non-binary mean (F1, log-probs) -> a 95% percentile bootstrap over items.
- `macro_mean(groups)`: the unweighted mean over groups (relations) -> a two-stage bootstrap:
  resample the groups, then the items within each drawn group (Davison and Hinkley 1997, 3.8), so
  one item per group still has the spread between groups; 0/1 items that are all 0 or all 1 get
  the Wilson interval of the pooled items instead of a zero-width one.
- `mcnemar(first, second)`: two systems on shared items, paired: b, c and the exact two-sided p;
  `pairwise_mcnemar(systems)`: every pair of systems, with Holm-adjusted p-values.
- `sign_test(plus, minus)`: the exact two-sided sign test (ties left out), e.g. PRS Improved vs Worsened.
- `difference_unpaired(k1, n1, k2, n2)`: p1 - p2 of two groups of different items (head - tail),
  with Newcombe's hybrid Wilson interval (Newcombe 1998, method 10), labelled unpaired.
- `difference_paired(first, second)`: p1 - p2 on the same items (open book - prior) with
  Newcombe's paired interval (Newcombe 1998b, method 10: Wilson limits and the phi correlation).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

Z_95 = 1.959964
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
SMALL_N = 30  # a table cell over fewer items is marked as small


def wilson(k: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of k successes in n trials; None when n = 0."""
    if n == 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"wilson: k = {k} is not within 0..n = {n}")
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # clamp float noise at the ends (k = 0 or k = n give a bound of exactly 0 or 1)
    return max(0.0, centre - half), min(1.0, centre + half)


def proportion(k: int, n: int) -> dict:
    """An Estimate for k of n items: value k/n with its 95% Wilson interval."""
    interval = wilson(int(k), int(n))
    return {
        "value": k / n if n else None,
        "n": int(n),
        "k": int(k),
        "ci_low": interval[0] if interval else None,
        "ci_high": interval[1] if interval else None,
        "interval": "wilson",
    }


def proportion_of(flags: Sequence[bool]) -> dict:
    return proportion(sum(bool(f) for f in flags), len(flags))


def undefined(reason: str) -> dict:
    """An Estimate the model's backend cannot give (no exact ranks, no log-probs): never approximated."""
    return {"value": None, "n": 0, "ci_low": None, "ci_high": None, "interval": "none", "undefined": reason}


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default 'linear' method)."""
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _bootstrap(values: list[float], seed: int, resamples: int) -> tuple[float, float]:
    rng = random.Random(seed)
    replicates = sorted(_mean([values[rng.randrange(len(values))] for _ in values]) for _ in range(resamples))
    return percentile(replicates, 0.025), percentile(replicates, 0.975)


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def mean(values: Sequence[float], seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES) -> dict:
    """An Estimate for the mean of non-binary scores, with a seeded 95% percentile bootstrap."""
    values = [float(v) for v in values]
    estimate = {
        "value": _mean(values) if values else None,
        "n": len(values),
        "ci_low": None,
        "ci_high": None,
        "interval": "bootstrap",
        "seed": seed,
        "resamples": resamples,
    }
    if values:
        estimate["ci_low"], estimate["ci_high"] = _bootstrap(values, seed, resamples)
    return estimate


TWO_STAGE = "two-stage bootstrap: groups with replacement, then items within each drawn group"
WILSON_FALLBACK = "Wilson interval of the pooled items (0/1 items all equal: no resample can spread them)"


def _binary_extreme(values: Sequence[float]) -> bool:
    """True when every value is 0 or every value is 1: 0/1 outcomes a resample cannot spread."""
    return bool(values) and (all(v == 0.0 for v in values) or all(v == 1.0 for v in values))


def _two_stage(groups: list[list[float]], seed: int, resamples: int) -> tuple[float, float]:
    """Percentile interval of the macro mean: each replicate draws as many groups as there are,
    with replacement, then as many items as each drawn group holds, with replacement."""
    rng = random.Random(seed)
    replicates = []
    for _ in range(resamples):
        drawn = [groups[rng.randrange(len(groups))] for _ in groups]
        replicates.append(_mean([_mean([g[rng.randrange(len(g))] for _ in g]) for g in drawn]))
    replicates.sort()
    return percentile(replicates, 0.025), percentile(replicates, 0.975)


def macro_mean(groups: Mapping[str, Sequence[float]], seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES) -> dict:
    """An Estimate for the unweighted mean over groups of each group's mean (LAMA's macro P@1).
    `n` counts items; `groups` counts groups; `method` says how the interval was made.

    The interval is a two-stage bootstrap (groups, then items within each drawn group). A
    bootstrap that keeps every group and resamples only within them collapses to a point when each
    group holds one item (20 facts of 20 relations gave 0.077 [0.077, 0.077]); resampling the
    groups keeps the spread between them, at the price of treating the relations as a sample of
    relations (for a fixed relation set with many items each, it is conservative). When the items
    are 0/1 and all equal, no resample moves the value, yet k of n does not fix a rate: the
    Wilson interval of the pooled items stands in. Any other all-equal data fix the value (zero width)."""
    kept = [[float(v) for v in values] for _, values in sorted(groups.items()) if len(values)]
    pooled = [v for g in kept for v in g]
    estimate = {
        "value": _mean([_mean(g) for g in kept]) if kept else None,
        "n": len(pooled),
        "groups": len(kept),
        "ci_low": None,
        "ci_high": None,
        "interval": "bootstrap",
        "seed": seed,
        "resamples": resamples,
        "method": TWO_STAGE,
    }
    if _binary_extreme(pooled):
        low, high = wilson(int(sum(pooled)), len(pooled))
        estimate = {k: v for k, v in estimate.items() if k not in ("seed", "resamples")}
        return {**estimate, "ci_low": low, "ci_high": high, "interval": "wilson", "method": WILSON_FALLBACK}
    if kept:
        low, high = _two_stage(kept, seed, resamples)
        # the percentiles of a skewed two-stage distribution can miss the point: widened to hold it
        estimate["ci_low"], estimate["ci_high"] = min(low, estimate["value"]), max(high, estimate["value"])
    return estimate


def binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial test of k successes in n trials at p = 0.5 (min(k, n-k) doubled),
    capped at 1; 1 when n = 0."""
    if n == 0:
        return 1.0
    low = min(k, n - k)
    tail = math.fsum(math.comb(n, i) for i in range(low + 1)) / 2**n
    return min(1.0, 2 * tail)


def fisher_exact_p(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided Fisher exact p of k1/n1 against k2/n2 (two independent proportions)."""
    from scipy.stats import fisher_exact

    return float(fisher_exact([[k1, n1 - k1], [k2, n2 - k2]], alternative="two-sided").pvalue)


def binomial_p(k: int, n: int, p: float) -> float:
    """Exact two-sided binomial p of k successes in n trials against rate p (scipy's: the outcomes
    no likelier than k); 1 when n = 0."""
    from scipy.stats import binomtest

    return float(binomtest(k, n, p).pvalue) if n else 1.0


def mcnemar(first: Mapping[str, bool], second: Mapping[str, bool]) -> dict:
    """Exact McNemar test of two systems on the items both have (keys present on one side only
    are left out and counted). b = right only under `first`, c = right only under `second`."""
    shared = sorted(set(first) & set(second))
    b = sum(1 for i in shared if first[i] and not second[i])
    c = sum(1 for i in shared if second[i] and not first[i])
    return {
        "n_shared": len(shared),
        "only_first": len(set(first) - set(second)),
        "only_second": len(set(second) - set(first)),
        "b": b,
        "c": c,
        "p_value": binomial_two_sided(b, b + c),
        "test": "exact McNemar (two-sided binomial of min(b, c) in b + c at 0.5)",
    }


def pairwise_mcnemar(systems: Mapping[str, Mapping[str, bool]]) -> list[dict]:
    """The exact McNemar test of every pair of systems (in the given order) on their shared items.
    `p_holm`: Holm's step-down adjustment over all the pairs, since a ranking reads them together."""
    names = list(systems)
    tests = [{"first": a, "second": b, **mcnemar(systems[a], systems[b])} for n, a in enumerate(names) for b in names[n + 1 :]]
    order = sorted(range(len(tests)), key=lambda i: (tests[i]["p_value"], i))
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(tests) - rank) * tests[i]["p_value"]))
        tests[i]["p_holm"] = running
    return tests


def sign_test(plus: int, minus: int) -> dict:
    """Exact two-sided sign test of `plus` against `minus` outcomes (ties are not counted)."""
    return {
        "plus": int(plus),
        "minus": int(minus),
        "n": int(plus + minus),
        "p_value": binomial_two_sided(int(plus), int(plus + minus)),
        "test": "exact sign test (two-sided binomial of plus in plus + minus at 0.5; ties left out)",
    }


def _difference(value, low, high, n: int, interval: str, **extra) -> dict:
    return {"value": value, "n": int(n), "ci_low": low, "ci_high": high, "interval": interval, **extra}


def difference_unpaired(k1: float, n1: int, k2: float, n2: int) -> dict:
    """An Estimate of p1 - p2 for two groups of different items, with Newcombe's hybrid score
    interval: d - sqrt((p1 - l1)^2 + (u2 - p2)^2), d + sqrt((u1 - p1)^2 + (p2 - l2)^2), (l, u) the
    Wilson limits of each group. Undefined (null) when either group is empty."""
    if n1 == 0 or n2 == 0:
        return _difference(None, None, None, n1 + n2, "newcombe", paired=False, n_first=int(n1), n_second=int(n2))
    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = wilson(k1, n1), wilson(k2, n2)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return _difference(d, max(-1.0, low), min(1.0, high), n1 + n2, "newcombe", paired=False, n_first=int(n1), n_second=int(n2))


def difference_paired(first: Mapping[str, bool], second: Mapping[str, bool]) -> dict:
    """An Estimate of p_first - p_second on the items both have, with Newcombe's paired interval
    (method 10): with Wilson limits (l, u) of each margin and phi the correlation of the 2x2
    table (ad - bc reduced by n/2 when positive, as Newcombe corrects it),
    low = d - sqrt(dl1^2 - 2 phi dl1 du2 + du2^2), dl1 = p1 - l1, du2 = u2 - p2 (and symmetrically
    for high). `only_first` / `only_second` count the items left out."""
    shared = sorted(set(first) & set(second))
    n = len(shared)
    extra = {"paired": True, "only_first": len(set(first) - set(second)), "only_second": len(set(second) - set(first))}
    if n == 0:
        return _difference(None, None, None, 0, "newcombe-paired", **extra)
    both = sum(1 for i in shared if first[i] and second[i])
    b = sum(1 for i in shared if first[i] and not second[i])
    c = sum(1 for i in shared if second[i] and not first[i])
    neither = n - both - b - c
    p1, p2 = (both + b) / n, (both + c) / n
    (l1, u1), (l2, u2) = wilson(both + b, n), wilson(both + c, n)
    margins = (both + b) * (c + neither) * (both + c) * (b + neither)
    # Newcombe's phi: a positive association is reduced by n/2 (floored at 0), which keeps the
    # interval from collapsing to zero width when no item is discordant
    association = both * neither - b * c
    if association > 0:
        association = max(association - n / 2, 0.0)
    phi = association / math.sqrt(margins) if margins else 0.0
    d = p1 - p2
    dl1, du1, dl2, du2 = p1 - l1, u1 - p1, p2 - l2, u2 - p2
    low = d - math.sqrt(max(0.0, dl1**2 - 2 * phi * dl1 * du2 + du2**2))
    high = d + math.sqrt(max(0.0, du1**2 - 2 * phi * du1 * dl2 + dl2**2))
    return _difference(d, max(-1.0, low), min(1.0, high), n, "newcombe-paired", **extra)


BIN_CONTRASTS = (("head", "tail"), ("head", "torso"))  # MAPLE and KoLA compare frequent with rare entities


def bin_differences(per_bin: Mapping[str, Mapping[str, Mapping]], names: Sequence[str] | None = None) -> dict[str, dict]:
    """{"head - tail": {metric: difference_unpaired}} for each contrast whose two bins exist, over
    the proportion Estimates (those with k) of `names` (default: every proportion of the first bin)."""
    out: dict[str, dict] = {}
    for first, second in BIN_CONTRASTS:
        if first not in per_bin or second not in per_bin:
            continue
        a, b = per_bin[first], per_bin[second]
        wanted = names if names is not None else list(a)
        out[f"{first} - {second}"] = {
            m: difference_unpaired(a[m]["k"], a[m]["n"], b[m]["k"], b[m]["n"])
            for m in wanted
            if m in a and m in b and "k" in a[m] and "k" in b[m]
        }
    return out


def is_small(estimate: Mapping) -> bool:
    return estimate.get("n", 0) < SMALL_N


def format_estimate(estimate: Mapping | None, digits: int = 3, percent: bool = False) -> str:
    """'0.420 [0.351, 0.492]' for tables; 'undefined' for n = 0 (with the reason when there is one);
    '*' marks n < 30."""
    if estimate and estimate.get("undefined"):
        return f"undefined ({estimate['undefined']})"
    if not estimate or estimate.get("value") is None:
        return "undefined"
    scale = 100 if percent else 1
    text = f"{scale * estimate['value']:.{digits}f}"
    if estimate.get("ci_low") is not None:
        text += f" [{scale * estimate['ci_low']:.{digits}f}, {scale * estimate['ci_high']:.{digits}f}]"
    return text + ("*" if is_small(estimate) else "")
