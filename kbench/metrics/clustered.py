"""Intervals for figures measured on items nested in runs, and comparisons on facts (XTEVAL).

XTEVAL's downstream accuracy, usable knowledge and Gap 2 are means over runs (extraction x split x
fine-tune seeds) of figures that are themselves measured on items: a run's test queries, and the
probed facts of D behind its acc_D. A bootstrap over runs alone ignores the items (at one run it
is zero-width); a Wilson interval over pooled queries ignores the runs. `gap_replicates` is a
two-level percentile bootstrap:

1. resample the run keys (extraction, split, fine-tune seed) with replacement;
2. within each resampled run, draw its accuracy on its test queries, and within each resampled
   extraction seed its acc_D on D's probed facts (once per replicate, so the runs of one
   extraction seed share the draw), from the Jeffreys posterior Beta(k + 1/2, n - k + 1/2) of
   k correct of n. This is the item-level resample made smooth: like a resample of the n items it
   has the binomial spread, but it is not zero-width when every query is right (or wrong), and at
   one run it gives the Jeffreys interval (Brown, Cai and DasGupta 2001), close to Wilson's.

The interval is the 2.5 and 97.5 percentiles of the replicates, widened where needed to hold the
point value (Brown et al.'s rule for the Jeffreys interval at k = 0 and k = n). IID and OOD runs
with the same key are resampled together, so the IID - OOD difference is paired on runs
(extraction seeds); their queries are different facts and are drawn independently. Each run's
queries are its own sample, although fine-tune runs of one split query the same facts (a slight
overstatement of the item-level spread). Seeded numpy generator (PCG64): reruns give the same
replicates.

acc_D and Gap 1 (`extraction_estimates`) depend on the probed facts and the extraction seeds, a
crossed design (every seed probes every fact). At one extraction seed the interval is Wilson's over
the facts and covers the facts only: no seed spread can be measured from one seed, and the Estimate
says so in `covers` (the task's protocol block adds an entry). At several seeds it is a two-way
bootstrap (Owen 2007, the "pigeonhole" bootstrap): each replicate resamples the facts and, apart,
the seeds, so both spreads are inside. A two-way bootstrap of 0/1 outcomes that are all equal
(every seed knows every fact, or none) cannot move: then Wilson's interval over the facts stands in.
Neither is ever zero-width at acc_D = 0 or 1.

Comparisons of two systems on facts:
- `paired_shares`: each fact's share of correct outcomes under either system (0/1 with one
  outcome per fact); b = facts the first does better on, c = the second; the exact two-sided
  sign test of b in b + c (exact McNemar when outcomes are 0/1), and the mean paired difference
  with Newcombe's paired interval when outcomes are 0/1, else a bootstrap over facts (facts that
  cannot be paired: `uncertainty.difference_unpaired`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kbench.metrics import uncertainty as u

LEVELS = "two-level bootstrap: runs, then (Jeffreys draws) test queries and D's probed facts within each run"


@dataclass(frozen=True)
class RunCounts:
    """One downstream run: its key (shared by IID and OOD), extraction seed and test outcomes."""

    key: tuple[int, int, int]  # (extraction seed, split seed, fine-tune seed)
    correct: int
    queries: int

    @property
    def extraction_seed(self) -> int:
        return self.key[0]


def _run_key(row: dict) -> tuple[int, int, int]:
    return (int(row["extraction_seed"]), int(row["split_seed"]), int(row["finetune_seed"]))


def run_counts(queries: list[dict]) -> list[RunCounts]:
    """One setting's query rows as per-run counts (correct of queries), in run-key order."""
    per_run: dict[tuple, list[bool]] = defaultdict(list)
    for q in queries:
        per_run[_run_key(q)].append(bool(q["correct"]))
    return [RunCounts(k, sum(v), len(v)) for k, v in sorted(per_run.items())]


def headline_values(runs: list[RunCounts], known: dict[int, tuple[int, int]]) -> dict[str, float]:
    """The headline figures of one setting: each the mean over runs of the run's figure."""
    acc_d = [known[r.extraction_seed][0] / known[r.extraction_seed][1] for r in runs]
    down = [r.correct / r.queries for r in runs]
    return {
        "downstream_accuracy": sum(down) / len(runs),
        "usable_knowledge": sum(a * d for a, d in zip(acc_d, down)) / len(runs),
        "gap2": sum(a * (1 - d) for a, d in zip(acc_d, down)) / len(runs),
    }


def gap_replicates(
    settings: Mapping[str, Sequence[RunCounts]],
    known: Mapping[int, tuple[int, int]],
    seed: int = u.BOOTSTRAP_SEED,
    resamples: int = u.BOOTSTRAP_RESAMPLES,
) -> dict[str, dict[str, list[float]]]:
    """{setting: {figure: replicates}} for downstream_accuracy, usable_knowledge and gap2.
    `known` maps an extraction seed to (known facts, probed facts); every setting has the same run keys."""
    import numpy as np

    keys = sorted({run.key for runs in settings.values() for run in runs})
    for setting, runs in settings.items():
        if sorted(run.key for run in runs) != keys:
            raise ValueError(f"gap_replicates: the {setting} runs do not have the run keys of the other settings")
    seeds = sorted(known)
    rng = np.random.default_rng(seed)
    hits, probed = np.array([known[e][0] for e in seeds]), np.array([known[e][1] for e in seeds])
    acc_d = rng.beta(hits + 0.5, probed - hits + 0.5, size=(resamples, len(seeds)))
    picks = rng.integers(len(keys), size=(resamples, len(keys)))
    seed_of_key = np.array([seeds.index(k[0]) for k in keys])
    acc_run = np.take_along_axis(acc_d, seed_of_key[picks], axis=1)
    out = {}
    for setting, runs in sorted(settings.items()):
        by_key = {run.key: run for run in runs}
        correct = np.array([by_key[k].correct for k in keys])[picks]
        wrong = np.array([by_key[k].queries - by_key[k].correct for k in keys])[picks]
        downstream = rng.beta(correct + 0.5, wrong + 0.5)
        out[setting] = {
            "downstream_accuracy": downstream.mean(axis=1).tolist(),
            "usable_knowledge": (acc_run * downstream).mean(axis=1).tolist(),
            "gap2": (acc_run * (1 - downstream)).mean(axis=1).tolist(),
        }
    return out


def bootstrap_estimate(value: float, replicates: Sequence[float], n: int, seed: int, **extra) -> dict:
    """An Estimate (interval "bootstrap") from the point value and its percentile replicates,
    widened where needed to hold the value."""
    import numpy as np

    low, high = np.percentile(np.asarray(replicates, dtype=float), [2.5, 97.5])  # linear, as uncertainty.mean
    return {
        "value": value,
        "n": n,
        "ci_low": min(float(low), value),
        "ci_high": max(float(high), value),
        "interval": "bootstrap",
        "seed": seed,
        "resamples": len(replicates),
        "method": LEVELS,
        **extra,
    }


FACTS_ONLY = "facts only: one extraction seed, so the seed-to-seed spread is not inside"
SEEDS_AGREE = "facts and extraction seeds: every seed gives every fact the same outcome, so Wilson over the facts"
FACTS_AND_SEEDS = "facts and extraction seeds: two-way bootstrap resampling the facts and, apart, the seeds"


def extraction_estimates(
    known: Mapping[int, Mapping[str, bool]], seed: int = u.BOOTSTRAP_SEED, resamples: int = u.BOOTSTRAP_RESAMPLES
) -> tuple[dict, dict]:
    """(acc_D, Gap 1) Estimates from {extraction seed: {probed fact id: known}}: the mean over facts
    of the share of seeds that know the fact (n = facts), with the interval the module docstring
    gives; `covers` says whether the seed spread is inside it, `seeds` how many there were."""
    import numpy as np

    seeds = sorted(known)
    facts = sorted(set().union(*(known[e] for e in seeds)))
    if not facts:
        raise ValueError("extraction_estimates: no probed fact")
    # a fact one seed did not probe (it never happens: probing depends on the data, not the seed)
    # takes its share over the seeds that probed it, as the value does
    table = np.array([[float(known[e].get(f, np.nan)) for f in facts] for e in seeds])
    shares = np.nanmean(table, axis=0)
    value = float(shares.mean())
    outcomes = table[~np.isnan(table)]
    if len(seeds) == 1 or np.all(outcomes == outcomes[0]):  # one seed, or 0/1 outcomes all equal
        low, high = u.wilson(int(round(value * len(facts))), len(facts))
        interval, covers = "wilson", FACTS_ONLY if len(seeds) == 1 else SEEDS_AGREE
    else:
        rng = np.random.default_rng(seed)
        replicates = [
            float(np.nanmean(table[np.ix_(rng.integers(len(seeds), size=len(seeds)), rng.integers(len(facts), size=len(facts)))]))
            for _ in range(resamples)
        ]
        low, high = (float(x) for x in np.percentile(replicates, [2.5, 97.5]))
        low, high, interval, covers = min(low, value), max(high, value), "bootstrap", FACTS_AND_SEEDS
    common = {
        "n": len(facts),
        "interval": interval,
        "seeds": len(seeds),
        "covers": covers,
    }
    if interval == "bootstrap":
        common.update(seed=seed, resamples=resamples)
    acc_d = {"value": value, "ci_low": low, "ci_high": high, **common}
    gap1 = {"value": 1 - value, "ci_low": 1 - high, "ci_high": 1 - low, **common}
    return acc_d, gap1


def paired_shares(
    first: Mapping[str, float], second: Mapping[str, float], seed: int = u.BOOTSTRAP_SEED, resamples: int = u.BOOTSTRAP_RESAMPLES
) -> dict:
    """Two systems on the facts both have: sign test (exact McNemar for 0/1) and the mean paired
    difference first - second (`_paired_difference`)."""
    shared = sorted(set(first) & set(second))
    b = sum(first[f] > second[f] for f in shared)
    c = sum(second[f] > first[f] for f in shared)
    return {
        "paired": True,
        "n_shared": len(shared),
        "only_first": len(set(first) - set(second)),
        "only_second": len(set(second) - set(first)),
        "b": b,
        "c": c,
        "p_value": u.binomial_two_sided(b, b + c),
        "test": "exact McNemar on facts (a sign test of b in b + c when a fact has several outcomes)",
        "difference": _paired_difference(first, second, shared, seed, resamples),
    }


def _paired_difference(
    first: Mapping[str, float], second: Mapping[str, float], shared: list[str], seed: int, resamples: int
) -> dict:
    """first - second over the shared facts. 0/1 outcomes (one per fact): Newcombe's paired interval,
    which is not zero-width when the two agree on every fact (a bootstrap of all-zero differences
    would claim the difference is exactly 0); shares over several outcomes: a bootstrap over facts."""
    if shared and all(v in (0.0, 1.0) for f in shared for v in (first[f], second[f])):
        return u.difference_paired({f: first[f] == 1.0 for f in shared}, {f: second[f] == 1.0 for f in shared})
    return u.mean([first[f] - second[f] for f in shared], seed=seed, resamples=resamples)


def share_estimate(shares: Sequence[float], seed: int = u.BOOTSTRAP_SEED) -> dict:
    """Accuracy over facts: Wilson when every fact has one 0/1 outcome, else a bootstrap of the shares."""
    if all(s in (0.0, 1.0) for s in shares):
        return u.proportion(int(sum(shares)), len(shares))
    return u.mean(shares, seed=seed)
