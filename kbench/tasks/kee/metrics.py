"""MAPLE knowledge-elicitation (KEE) metrics as pure functions over per-item tables.

Definitions follow the MAPLE paper (Section 3.2; docs/definitions.md, "KEE metrics"):

- accuracy = |S| / N.
- Gain = |F_base ∩ S_kee| / |F_base|; Loss = |S_base ∩ F_kee| / |S_base|.
- PRS: over the unflipped 0→0 items (wrong under both), drop items whose first gold token is
  ranked first (rank 1) under either setting, then label each remaining item Improved
  (r_kee < r_base), Tied or Worsened and report each label's proportion. Undefined for a
  temperature-sampling method (`SAMPLING_PRS_UNDEFINED`): its rank is the baseline's.
- SGR / DGR: base failures split by K seed-A samples into shallow (some sample correct) and deep
  (none correct); SGR = |recovered ∩ shallow| / |shallow|, DGR = |recovered ∩ deep| / |deep|. A
  method answering once recovers an item when its answer is correct. For a temperature-sampling
  method MAPLE draws K new seed-B samples but never says when they recover an item: `READINGS`
  are the three readings kbench computes (`recovered`; "any-of-k" is the run's default, an
  interpretation, docs/definitions.md).
- Kendall tau-b between two score vectors (ties handled as in tau-b), used to compare the method
  ranking at each K with the ranking at the reference K = 20.

Inputs are mappings keyed by item id so that two techniques are always compared on the same
items; a key present on one side only is an error, never silently dropped. Accuracy, Gain, Loss,
the PRS shares and SGR/DGR are Estimates (`kbench.metrics.uncertainty.proportion`: value, n, 95%
Wilson interval; value null for an empty denominator, never a division by zero); the PRS carries
the exact sign test of Improved against Worsened (MAPLE compares the two).
The Kendall tau of the ranking gets a seeded bootstrap interval over base failures
(`ranking_stability_intervals`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

from kbench.metrics import uncertainty as u
from kbench.metrics.rank_correlation import kendall_tau_b

Ratio = Optional[float]


def _same_items(base: Mapping, kee: Mapping, what: str) -> None:
    if base.keys() != kee.keys():
        only_base = sorted(set(base) - set(kee))[:3]
        only_kee = sorted(set(kee) - set(base))[:3]
        raise ValueError(
            f"{what}: the two tables cover different items (only in base: {only_base}, only in technique: {only_kee})"
        )


def accuracy(correct: Mapping[str, bool] | Sequence[bool]) -> dict:
    values = list(correct.values()) if isinstance(correct, Mapping) else list(correct)
    return u.proportion_of(values)


def gain(base_correct: Mapping[str, bool], kee_correct: Mapping[str, bool]) -> dict:
    """Share of baseline failures that the technique answers correctly."""
    _same_items(base_correct, kee_correct, "gain")
    return u.proportion_of([bool(kee_correct[i]) for i, ok in base_correct.items() if not ok])


def loss(base_correct: Mapping[str, bool], kee_correct: Mapping[str, bool]) -> dict:
    """Share of baseline successes that the technique answers incorrectly."""
    _same_items(base_correct, kee_correct, "loss")
    return u.proportion_of([not kee_correct[i] for i, ok in base_correct.items() if ok])


#: Why a temperature-sampling method has no PRS (`prs_undefined`).
SAMPLING_PRS_UNDEFINED = (
    "a temperature-sampling method changes neither the prompt nor the weights: its gold rank is the baseline's, "
    "so Tied would be 100% by construction"
)


def prs_undefined(reason: str) -> dict:
    """A PRS block with no items (n = 0, every share undefined) and the reason it is undefined."""
    return {**prs({}, {}, {}, {}), "undefined": reason}


def prs(
    base_correct: Mapping[str, bool], kee_correct: Mapping[str, bool], base_rank: Mapping[str, int], kee_rank: Mapping[str, int]
) -> dict:
    """{"n", "improved", "tied", "worsened" (Estimates), "sign_test"}. Ranks are 1-based
    full-vocabulary ranks of the first gold token (1 = top)."""
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
    return {
        "n": n,
        **{label: u.proportion(c, n) for label, c in counts.items()},
        "sign_test": u.sign_test(counts["improved"], counts["worsened"]),
    }


def partition_failures(
    base_correct: Mapping[str, bool], sample_correct: Mapping[str, Sequence[bool]], k: int
) -> tuple[set[str], set[str]]:
    """(shallow, deep) base failures by the first `k` seed-A samples of each item.

    Shallow: wrong under greedy but some of the k samples is correct; deep: none is.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    shallow: set[str] = set()
    deep: set[str] = set()
    for item, ok in base_correct.items():
        if ok:
            continue
        samples = sample_correct[item]
        if len(samples) < k:
            raise ValueError(f"item {item!r} has {len(samples)} samples, fewer than k={k}")
        (shallow if any(samples[:k]) else deep).add(item)
    return shallow, deep


def shallow_counts(
    base_correct: Mapping[str, bool], sample_correct: Mapping[str, Sequence[bool]], sweep_max: int
) -> dict[str, int]:
    """{K: shallow failures found by the first K seed-A samples} for K = 1..sweep_max. The samples
    at K are the first K of one draw, so each K finds every failure the smaller K found (MAPLE
    reads K = 20 against K = 30 to justify K = 20)."""
    failures = [i for i, ok in base_correct.items() if not ok]
    first_hit = [next((n for n, ok in enumerate(sample_correct[i][:sweep_max]) if ok), sweep_max) for i in failures]
    return {str(k): sum(hit < k for hit in first_hit) for k in range(1, sweep_max + 1)}


#: The readings of "recovered" for a method that keeps K seed-B samples (MAPLE is silent on which):
#: any of the first K correct, more than half of them correct, the first sample correct.
READINGS = ("any-of-k", "majority-of-k", "one-sample")


def recovered(outcome: bool | Sequence[bool], k: int, reading: str = "any-of-k") -> bool:
    """Whether a method recovers an item at K = k: `outcome` is its answer's correctness (a bool,
    the same at every K and under every reading) or its seed-B samples' correctness in draw order,
    read as `reading` (`READINGS`; "one-sample" reads the first sample at every K). Fewer than k
    samples is an error."""
    if isinstance(outcome, (bool, int)):
        return bool(outcome)
    if len(outcome) < k:
        raise ValueError(f"{len(outcome)} seed-B samples, fewer than K={k}")
    first = [bool(x) for x in outcome[:k]]
    if reading == "any-of-k":
        return any(first)
    if reading == "majority-of-k":
        return 2 * sum(first) > k  # strictly more than half: a tie at even K does not recover
    if reading == "one-sample":
        return first[0]
    raise ValueError(f"unknown reading {reading!r}; known: {', '.join(READINGS)}")


def recovered_by(method_outcomes: Mapping[str, bool | Sequence[bool]], k: int, reading: str = "any-of-k") -> dict[str, bool]:
    """{item: recovered at K = k} of one method (`recovered`)."""
    return {i: recovered(outcome, k, reading) for i, outcome in method_outcomes.items()}


def reading_rates(shallow: set[str], deep: set[str], outcomes: Mapping[str, Sequence[bool]], k: int) -> dict[str, dict]:
    """{reading: {"sgr", "dgr"}} of a method with seed-B samples, under each of `READINGS`."""
    out = {}
    for reading in READINGS:
        sgr, dgr = gain_rates(shallow, deep, recovered_by(outcomes, k, reading))
        out[reading] = {"sgr": sgr, "dgr": dgr}
    return out


def gain_rates(shallow: set[str], deep: set[str], kee_correct: Mapping[str, bool]) -> tuple[dict, dict]:
    """(SGR, DGR) Estimates: the share of shallow and of deep failures the method answers correctly."""
    sgr = u.proportion_of([bool(kee_correct[i]) for i in sorted(shallow)])
    return sgr, u.proportion_of([bool(kee_correct[i]) for i in sorted(deep)])


def ranking_stability(scores_by_k: Mapping[int, Mapping[str, Ratio]], reference_k: int = 20) -> dict[int, Ratio]:
    """Kendall tau-b between the method scores at each K and at `reference_k`.

    Scores are plain numbers (an Estimate's value). Methods whose score is undefined at either K
    are left out of that comparison; fewer than two comparable methods gives None.
    """
    if reference_k not in scores_by_k:
        raise ValueError(f"reference K={reference_k} missing from the sweep {sorted(scores_by_k)}")
    reference = scores_by_k[reference_k]
    out: dict[int, Ratio] = {}
    for k, scores in sorted(scores_by_k.items()):
        pairs = [(x, y) for m in sorted(scores) if (x := scores[m]) is not None and (y := reference.get(m)) is not None]
        out[k] = None if len(pairs) < 2 else kendall_tau_b([x for x, _ in pairs], [y for _, y in pairs])
    return out


def _tau_b_rows(x, y):
    """Kendall tau-b of each row pair of x and y ((resamples, methods) arrays); NaN where undefined."""
    import numpy as np

    i, j = np.triu_indices(x.shape[1], 1)
    dx, dy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    pairs = len(i)
    score = (dx * dy).sum(1)  # concordant - discordant (a tie in either gives 0)
    denominator = np.sqrt((pairs - (dx == 0).sum(1)) * (pairs - (dy == 0).sum(1)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, score / np.where(denominator > 0, denominator, 1), np.nan)


def ranking_stability_intervals(
    base_correct: Mapping[str, bool],
    sample_correct: Mapping[str, Sequence[bool]],
    method_correct: Mapping[str, Mapping[str, bool | Sequence[bool]]],
    sweep_max: int,
    reference_k: int,
    seed: int = u.BOOTSTRAP_SEED,
    resamples: int = u.BOOTSTRAP_RESAMPLES,
) -> dict[str, dict[str, dict]]:
    """{"sgr" | "dgr": {K: Estimate of tau-b(ranking at K, ranking at reference_k)}} for K = 1..sweep_max.

    `method_correct[m][item]` is the method's outcome as `recovered` reads it: a temperature-sampling
    method's seed-B samples make its recoveries grow with K, as MAPLE draws K new samples at each K.
    The value is `ranking_stability` on the run's items; the 95% percentile interval resamples the
    base failures with replacement (seeded; every K and both rates read the same resamples, so
    the taus of one replicate stay comparable) and recomputes the partition, the rates and tau.
    A replicate where tau is undefined (no shallow or deep failure, or constant scores) is left
    out and counted in `undefined_resamples`. n = the base failures."""
    import numpy as np

    methods = list(method_correct)
    failures = sorted(i for i, ok in base_correct.items() if not ok)
    first_hit = np.array([next((n for n, ok in enumerate(sample_correct[i]) if ok), sweep_max) for i in failures])
    # per method and failure: the smallest K at which the method recovers it (sweep_max + 1: never)
    never = sweep_max + 1
    recovered_from = np.array(
        [[next((k for k in range(1, never) if recovered(method_correct[m][i], k)), never) for i in failures] for m in methods],
        dtype=float,
    ).reshape(len(methods), -1)
    rng = np.random.default_rng(seed)
    n = len(failures)
    draws = [np.bincount(rng.integers(0, n, n), minlength=n) if n else np.zeros(0) for _ in range(resamples)]
    counts = np.stack(draws).astype(float)

    def rates(k: int, shallow: bool):
        """(resamples, methods) rates at K = k; integer-valued sums in float64 are exact."""
        mask = (first_hit < k) if shallow else (first_hit >= k)
        denominator = counts @ mask.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (counts @ ((recovered_from <= k) * mask).T) / denominator[:, None]

    out: dict[str, dict[str, dict]] = {}
    for rate, shallow in (("sgr", True), ("dgr", False)):
        points = {}
        for k in range(1, sweep_max + 1):
            split = partition_failures(base_correct, sample_correct, k)
            points[k] = {m: gain_rates(*split, recovered_by(method_correct[m], k))[0 if shallow else 1]["value"] for m in methods}
        values = ranking_stability(points, reference_k)
        reference = rates(reference_k, shallow)
        out[rate] = {}
        for k in range(1, sweep_max + 1):
            taus = _tau_b_rows(rates(k, shallow), reference) if len(methods) >= 2 else np.full(resamples, np.nan)
            defined = np.sort(taus[~np.isnan(taus)]).tolist()
            out[rate][str(k)] = {
                "value": values[k],
                "n": len(failures),
                "ci_low": u.percentile(defined, 0.025) if defined else None,
                "ci_high": u.percentile(defined, 0.975) if defined else None,
                "interval": "bootstrap",
                "seed": seed,
                "resamples": resamples,
                "undefined_resamples": resamples - len(defined),
            }
    return out
