"""Rank correlation of paired score vectors: how far two rankings of the same methods agree
(KEE's ranking stability over K, MAPLE-25's Gain-vs-PRS claim), and Spearman's rho with its
exact permutation p (the claims' trends in model size)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two paired score vectors; None when either vector is constant.

    tau_b = (concordant - discordant) / sqrt((n0 - ties_x) * (n0 - ties_y)), n0 = n(n-1)/2,
    counting pairs tied in x (resp. y) including pairs tied in both. O(n^2): rankings of a
    handful of methods.
    """
    if len(x) != len(y):
        raise ValueError(f"kendall_tau_b: lengths differ ({len(x)} vs {len(y)})")
    concordant = discordant = ties_x = ties_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx = (x[i] > x[j]) - (x[i] < x[j])
            dy = (y[i] > y[j]) - (y[i] < y[j])
            if dx == 0:
                ties_x += 1
            if dy == 0:
                ties_y += 1
            if dx and dy:
                concordant += dx == dy
                discordant += dx != dy
    pairs = n * (n - 1) // 2
    denominator = math.sqrt((pairs - ties_x) * (pairs - ties_y))
    return None if denominator == 0 else (concordant - discordant) / denominator


def _ordinal_ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    for rank, i in enumerate(order):
        out[i] = float(rank)
    return out


def spearman_rho(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rho of two paired vectors over ordinal ranks (a tie is ranked by position, as
    model sizes and headline means rarely tie); 0.0 when either vector has no spread."""
    rx, ry = _ordinal_ranks(xs), _ordinal_ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    spread = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return cov / spread if spread else 0.0


def spearman_exact(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """(rho, its exact two-sided permutation p): every order of `ys` (1/n! resolution: a perfect
    order of 4 points gives 2/24, of 5 points 2/120)."""
    rho = spearman_rho(xs, ys)
    perms = list(itertools.permutations(ys))
    return rho, sum(abs(spearman_rho(xs, list(p))) >= abs(rho) - 1e-12 for p in perms) / len(perms)
