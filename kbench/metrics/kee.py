"""MAPLE knowledge-elicitation (KEE) metrics as pure functions over per-item tables.

Definitions follow the MAPLE paper (Section 3.2; docs/definitions.md, "KEE metrics"):

- accuracy = |S| / N.
- Gain = |F_base ∩ S_kee| / |F_base|; Loss = |S_base ∩ F_kee| / |S_base|.
- PRS: over the unflipped 0→0 items (wrong under both), drop items whose first gold token is
  ranked first (rank 1) under either setting, then label each remaining item Improved
  (r_kee < r_base), Tied or Worsened and report each label's proportion.
- SGR / DGR: base failures split by K seed-A samples into shallow (some sample correct) and deep
  (none correct); SGR = |recovered ∩ shallow| / |shallow|, DGR = |recovered ∩ deep| / |deep|.
- Kendall tau-b between two score vectors (ties handled as in tau-b), used to compare the method
  ranking at each K with the ranking at the reference K = 20.

Inputs are mappings keyed by item id so that two techniques are always compared on the same
items; a key present on one side only is an error, never silently dropped. Every ratio with an
empty denominator is `None` ("undefined"), never a division by zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

Ratio = Optional[float]


def ratio(numerator: int, denominator: int) -> Ratio:
    """numerator / denominator, or None when the denominator is empty."""
    return None if denominator == 0 else numerator / denominator


def _same_items(base: Mapping, kee: Mapping, what: str) -> None:
    if base.keys() != kee.keys():
        only_base = sorted(set(base) - set(kee))[:3]
        only_kee = sorted(set(kee) - set(base))[:3]
        raise ValueError(
            f"{what}: the two tables cover different items (only in base: {only_base}, only in technique: {only_kee})"
        )


def accuracy(correct: Mapping[str, bool] | Sequence[bool]) -> Ratio:
    values = list(correct.values()) if isinstance(correct, Mapping) else list(correct)
    return ratio(sum(bool(v) for v in values), len(values))


def gain(base_correct: Mapping[str, bool], kee_correct: Mapping[str, bool]) -> Ratio:
    """Share of baseline failures that the technique answers correctly."""
    _same_items(base_correct, kee_correct, "gain")
    failures = [i for i, ok in base_correct.items() if not ok]
    return ratio(sum(bool(kee_correct[i]) for i in failures), len(failures))


def loss(base_correct: Mapping[str, bool], kee_correct: Mapping[str, bool]) -> Ratio:
    """Share of baseline successes that the technique answers incorrectly."""
    _same_items(base_correct, kee_correct, "loss")
    successes = [i for i, ok in base_correct.items() if ok]
    return ratio(sum(not kee_correct[i] for i in successes), len(successes))


@dataclass(frozen=True)
class PRS:
    """Probability Rank Shift over the unflipped failures that are not ranked first under either."""

    n: int
    improved: Ratio
    tied: Ratio
    worsened: Ratio

    def as_dict(self) -> dict:
        return {"n": self.n, "improved": self.improved, "tied": self.tied, "worsened": self.worsened}


def prs(
    base_correct: Mapping[str, bool], kee_correct: Mapping[str, bool], base_rank: Mapping[str, int], kee_rank: Mapping[str, int]
) -> PRS:
    """Ranks are 1-based full-vocabulary ranks of the first gold token (1 = top)."""
    _same_items(base_correct, kee_correct, "prs")
    counts = {"improved": 0, "tied": 0, "worsened": 0}
    for item, ok in base_correct.items():
        if ok or kee_correct[item]:
            continue  # only the 0→0 items
        r_base, r_kee = base_rank[item], kee_rank[item]
        if r_base == 1 or r_kee == 1:
            continue  # the failure lies beyond the first token
        label = "improved" if r_kee < r_base else "tied" if r_kee == r_base else "worsened"
        counts[label] += 1
    n = sum(counts.values())
    return PRS(n=n, **{label: ratio(c, n) for label, c in counts.items()})


def partition_failures(
    base_correct: Mapping[str, bool], sample_correct: Mapping[str, Sequence[bool]], k: int
) -> tuple[set[str], set[str]]:
    """(shallow, deep) base failures by the first `k` seed-A samples of each item.

    Shallow: wrong under greedy but some of the k samples is correct; deep: none is.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    shallow, deep = set(), set()
    for item, ok in base_correct.items():
        if ok:
            continue
        samples = sample_correct[item]
        if len(samples) < k:
            raise ValueError(f"item {item!r} has {len(samples)} samples, fewer than k={k}")
        (shallow if any(samples[:k]) else deep).add(item)
    return shallow, deep


def gain_rates(shallow: set[str], deep: set[str], kee_correct: Mapping[str, bool]) -> tuple[Ratio, Ratio]:
    """(SGR, DGR): the share of shallow and of deep failures the method answers correctly."""
    sgr = ratio(sum(bool(kee_correct[i]) for i in shallow), len(shallow))
    dgr = ratio(sum(bool(kee_correct[i]) for i in deep), len(deep))
    return sgr, dgr


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> Ratio:
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


def ranking_stability(scores_by_k: Mapping[int, Mapping[str, Ratio]], reference_k: int = 20) -> dict[int, Ratio]:
    """Kendall tau-b between the method scores at each K and at `reference_k`.

    Methods whose score is undefined at either K are left out of that comparison; fewer than two
    comparable methods gives None.
    """
    if reference_k not in scores_by_k:
        raise ValueError(f"reference K={reference_k} missing from the sweep {sorted(scores_by_k)}")
    reference = scores_by_k[reference_k]
    out: dict[int, Ratio] = {}
    for k, scores in sorted(scores_by_k.items()):
        methods = sorted(m for m in scores if scores[m] is not None and reference.get(m) is not None)
        out[k] = None if len(methods) < 2 else kendall_tau_b([scores[m] for m in methods], [reference[m] for m in methods])
    return out
