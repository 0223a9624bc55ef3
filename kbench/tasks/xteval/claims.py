"""XTEVAL's claim statistics, registered in `kbench.claims.statistics.STATISTICS`, each with the size
plan `kbench claims plan` gives it. XTEVAL's downstream figures are read from the run's query rows and
drawn with the task's own two-level bootstrap (`kbench.metrics.clustered.gap_replicates`: runs, then
items), seeded; IID − OOD with a cluster bootstrap over relations and a bootstrap p, which puts it
under Holm (docs/xteval-statistics.md, "The claims"). Across task entries (scope "entries"), the runs
are told apart by the fine-tuning settings each recorded, never by their labels."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kbench.claims.plan_sizes import Design, unplanned
from kbench.claims.statistics import (
    CLAIM_RESAMPLES,
    CLAIM_SEED,
    bootstrap_p,
    endpoints,
    paired_test,
    sized_points,
    statistic,
)
from kbench.metrics.clustered import RunCounts, bootstrap_estimate, gap_replicates, headline_values, run_counts
from kbench.metrics.uncertainty import wilson
from kbench.report.items import read_items
from kbench.report.runs import Run

if TYPE_CHECKING:
    from kbench.claims.sets import Claim
    from kbench.tasks.xteval.pipeline import XtevalSettings

# XTEVAL's printed number: OPT-125M predicts 34% of the facts (L179), the share of D that is D^theta
XTEVAL_ACC_D = 0.34


def design(claim: Claim, settings: XtevalSettings, rows: int) -> Design:
    """XTEVAL's downstream figures are read on the test queries (one per test fact) and drawn with the
    task's two-level bootstrap (runs, then items): at these sizes the items' variance dominates the
    runs' (XTEVAL prints sigma <= 0.011 over its 27 runs, L103), so a downstream accuracy is planned as
    a proportion over its test queries."""
    name = claim.statistic
    test = XTEVAL_ACC_D * (1 - settings.train_fraction)  # D^theta's test share of D
    per = f"test queries ≈ {test:.0%} of {rows} facts"
    if name == "xteval_gap1":
        return Design("proof", f"{rows} facts of D", rows)
    if name == "xteval_gap2":
        return Design("proof", per, rows * test)
    if name == "xteval_split_spread":
        if settings.split_seeds < 2:
            return Design("none", "no data: the split spread needs 2 split seeds or more", 0)
        return Design("two", f"{per}, per split seed", rows * test, rows * test, test, test)
    if name == "largest_minus_smallest":
        return Design("two", f"{per}, per model", rows * test, rows * test, test, test)
    if name == "xteval_iid_minus_ood":
        if settings.setting != "both":
            return Design("none", 'no data: IID − OOD needs `setting = "both"` in one entry', 0)
        return Design("two", f"{per} per setting (clustered by relation)", rows * test, rows * test, test, test)
    if name == "downstream_across_finetune":
        return Design("two", f"{per}, paired across entries", rows * test, rows * test, test, test)
    return unplanned(name)


def _finetune_value(settings: XtevalSettings, param: str) -> float:
    """An XTEVAL entry's value of a fine-tuning setting (`lr`, `negatives_per_type`)."""
    return float(getattr(settings.finetune, param))


def missing(claim: Claim, settings: list[XtevalSettings]) -> list[str]:
    """The fine-tuning values (`param` and `values`) a claim across entries compares that no entry runs."""
    ran = {_finetune_value(s, claim.params["param"]) for s in settings}
    return [f"{claim.params['param']} = {v:g}" for v in claim.params["values"] if float(v) not in ran]


def _downstream(run: Run, setting: str) -> tuple[list[dict], list[RunCounts], dict[int, tuple[int, int]]] | None:
    """(the setting's query rows, their per-run counts, extraction seed -> (known, probed)) from the
    run's items and extraction log; None when the run has no query of the setting."""
    queries = [r for r in read_items(run.path) if r.get("kind") == "query" and r.get("setting") == setting]
    seeds = ((run.metrics.get("extraction") or {}).get("seeds")) or []
    if not queries or not seeds:
        return None
    return queries, run_counts(queries), {s["seed"]: (s["n_known"], s["n_probed"]) for s in seeds}


def _replicates(counts: list[RunCounts], known: dict, setting: str, figure: str, seed: int) -> list[float]:
    """The task's two-level bootstrap (runs, then Jeffreys draws of each run's test queries and of
    acc_D) of one headline figure of one setting."""
    return gap_replicates({setting: counts}, known, seed=seed, resamples=CLAIM_RESAMPLES)[setting][figure]


@statistic("xteval_gap1", design=design)
def xteval_gap1(run: Run) -> dict | None:
    """Gap 1 = 1 − acc_D of the first extraction seed: the share of D the model does not predict,
    Wilson interval. One unpredicted fact proves Gap 1 > 0, so p is 0 then (1 with none)."""
    seeds = ((run.metrics.get("extraction") or {}).get("seeds")) or []
    if not seeds or not seeds[0].get("n_probed"):
        return None
    n = seeds[0]["n_probed"]
    k = n - seeds[0]["n_known"]
    low, high = wilson(k, n) or (0.0, 1.0)  # n > 0 here: the interval exists
    estimate = {"value": k / n, "ci_low": low, "ci_high": high, "n": n, "k": k, "interval": "wilson"}
    return {"estimate": estimate, "p_value": 0.0 if k else 1.0, "test": "Gap 1 > 0: facts of D not predicted (seed 1)"}


@statistic("xteval_gap2", design=design)
def xteval_gap2(run: Run, setting: str = "iid") -> dict | None:
    """Gap 2 (Figure 8's definition) of the setting, the mean over runs, with the task's two-level
    bootstrap interval (runs, then items: at one run an item-level interval). As with Gap 1, one
    missed test query proves Gap 2 > 0 on this sample (with acc_D > 0), so p is 0 then (1 with none):
    a bootstrap p would not test it, as the Jeffreys draws are never 0 and every replicate is > 0."""
    found = _downstream(run, setting)
    if found is None:
        return None
    queries, counts, known = found
    value = headline_values(counts, known)["gap2"]
    replicates = _replicates(counts, known, setting, "gap2", CLAIM_SEED)
    missed = sum(r.queries - r.correct for r in counts)
    n_facts = len({q.get("fact_id", q["id"]) for q in queries})
    estimate = bootstrap_estimate(value, replicates, n_facts, CLAIM_SEED, runs=len(counts))
    proven = missed > 0 and value > 0
    test = f"Gap 2 > 0 ({setting}): {missed} of {sum(r.queries for r in counts)} test queries missed over {len(counts)} run(s)"
    return {"estimate": estimate, "p_value": 0.0 if proven else 1.0, "test": test}


@statistic("xteval_split_spread", design=design)
def xteval_split_spread(run: Run, setting: str = "iid") -> dict | None:
    """The largest − the smallest split seed's mean downstream accuracy (over that seed's runs), for an
    equivalence read against the set's margin. Interval: the task's two-level bootstrap drawn for
    each split seed's runs apart (its own seed), and in each replicate the largest − the smallest
    split mean: the pick of the extremes is inside the interval, so the read is conservative."""
    found = _downstream(run, setting)
    if found is None:
        return None
    _, counts, known = found
    by_split: dict[int, list[RunCounts]] = {}
    for runs in counts:
        by_split.setdefault(runs.key[1], []).append(runs)
    if len(by_split) < 2:
        return None
    means = {seed: headline_values(runs, known)["downstream_accuracy"] for seed, runs in by_split.items()}
    high, low = max(means, key=lambda seed: (means[seed], -seed)), min(means, key=lambda seed: (means[seed], seed))
    groups = enumerate(by_split.values())  # each split seed's draws apart, with a seed of its own
    drawn = [_replicates(runs, known, setting, "downstream_accuracy", CLAIM_SEED + 1 + i) for i, runs in groups]
    spreads = [max(values) - min(values) for values in zip(*drawn)]
    estimate = bootstrap_estimate(means[high] - means[low], spreads, len(counts), CLAIM_SEED, runs=len(counts))
    test = f"downstream accuracy ({setting}): split seed {high} − split seed {low}, of {len(by_split)} split seeds"
    return {"estimate": estimate, "p_value": None, "test": test}


@statistic("xteval_iid_minus_ood", design=design)
def xteval_iid_minus_ood(run: Run) -> dict | None:
    """IID − OOD downstream accuracy (each the share of the setting's test queries answered, pooled
    over runs) with a cluster bootstrap over relations: OOD holds out whole relations, so a
    relation's queries are not independent. Each replicate draws the relations with replacement and
    takes both settings' queries of each drawn relation (paired on relations); a replicate that
    draws no query of a setting is left out. Two-sided bootstrap p (`bootstrap_p`)."""
    import numpy as np

    queries = [r for r in read_items(run.path) if r.get("kind") == "query" and r.get("setting") in ("iid", "ood")]
    if {q["setting"] for q in queries} != {"iid", "ood"} or any(q.get("relation") is None for q in queries):
        return None  # not run with --setting both, or rows written before they named their relation
    relations = sorted({str(q["relation"]) for q in queries})
    index = {relation: i for i, relation in enumerate(relations)}
    k, n = np.zeros((2, len(relations))), np.zeros((2, len(relations)))
    for q in queries:
        row = 0 if q["setting"] == "iid" else 1
        n[row, index[str(q["relation"])]] += 1
        k[row, index[str(q["relation"])]] += bool(q["correct"])
    rng = np.random.default_rng(CLAIM_SEED)
    picks = rng.integers(len(relations), size=(CLAIM_RESAMPLES, len(relations)))
    weights = np.zeros((CLAIM_RESAMPLES, len(relations)))
    np.add.at(weights, (np.arange(CLAIM_RESAMPLES)[:, None], picks), 1)
    hits, totals = weights @ k.T, weights @ n.T  # (resamples, 2): IID, OOD
    kept = np.all(totals > 0, axis=1)
    if not kept.any():
        return None
    replicates = (hits[kept, 0] / totals[kept, 0] - hits[kept, 1] / totals[kept, 1]).tolist()
    value = k[0].sum() / n[0].sum() - k[1].sum() / n[1].sum()
    method = "cluster bootstrap over relations (IID and OOD queries of each drawn relation)"
    estimate = bootstrap_estimate(float(value), replicates, len(relations), CLAIM_SEED, method=method, clusters=len(relations))
    sizes = f"{int(n[0].sum())} IID and {int(n[1].sum())} OOD test queries"
    test = f"IID − OOD over {sizes}, cluster bootstrap over {len(relations)} relations, two-sided bootstrap p"
    return {"estimate": estimate, "p_value": bootstrap_p(replicates), "test": test}


@statistic("largest_minus_smallest", design=design)
def largest_minus_smallest(points: list[tuple[int, Run]], path: str, min_sizes: int = 5) -> dict | None:
    """A headline figure (`path` settings.<setting>.<figure>) of the largest model − that of the
    smallest, with the task's two-level bootstrap (runs, then items) drawn for each model apart
    (unpaired: each model has its own D^theta and test queries). Interval only (an equivalence or a
    non-superiority read); `min_sizes` as for `size_trend`, so both parts of XTEVAL-14 read the
    same sizes. The test names both models with their parameter counts."""
    _, setting, figure = path.split(".")
    found = sized_points(points, min_sizes)
    if found is None:
        return None
    ends = [_downstream(run, setting) for _, run in (found[0], found[-1])]
    drawn = [end for end in ends if end is not None]
    if len(drawn) < len(ends):
        return None
    values, replicates = [], []
    for i, (_, counts, known) in enumerate(drawn):
        values.append(headline_values(counts, known)[figure])
        replicates.append(_replicates(counts, known, setting, figure, CLAIM_SEED + i))
    differences = [large - small for small, large in zip(*replicates)]
    estimate = bootstrap_estimate(values[1] - values[0], differences, len({p for p, _ in found}), CLAIM_SEED)
    test = f"{path}: {endpoints(found)}, of {len({p for p, _ in found})} sizes; two-level bootstrap per model, unpaired"
    return {"estimate": estimate, "p_value": None, "test": test}


def _query_correct(run: Run, setting: str) -> dict[str, bool]:
    return {
        str(r["id"]): bool(r["correct"])
        for r in read_items(run.path)
        if r.get("kind") == "query" and r.get("setting") == setting and r.get("correct") is not None
    }


def _finetune_runs(runs: Sequence[Run], param: str, values: Sequence[float]) -> dict[float, Run] | None:
    """value of the fine-tuning setting `param` -> the run at it, among runs whose other fine-tuning
    settings agree (a suite with learning-rate entries and negatives entries has three runs at
    4 negatives: the one at the default learning rate is the one that differs only in negatives).
    The first group of agreeing runs (suite order) with every value decides; None if none has."""
    groups: dict[str, dict[float, Run]] = {}
    for run in runs:
        finetune = (run.results.get("settings") or {}).get("finetune") or {}
        if finetune.get(param) is not None:
            others = json.dumps({k: v for k, v in finetune.items() if k != param}, sort_keys=True)
            groups.setdefault(others, {}).setdefault(float(finetune[param]), run)
    return next((g for g in groups.values() if all(float(v) in g for v in values)), None)


@statistic("downstream_across_finetune", design=design, missing=missing)
def downstream_across_finetune(runs: Sequence[Run], param: str, values: Sequence[float], setting: str = "iid") -> dict | None:
    """XTEVAL's downstream accuracy at one value of a fine-tuning setting (`lr`, XTEVAL-16;
    `negatives_per_type`, XTEVAL-7) − at another, on the test queries both runs share (one
    D^theta, one split seed: the same queries; the test distractors do not depend on the setting);
    of every pair of `values` the one farthest apart decides (an equivalence holds only if it holds
    there). None unless every value has a run whose other fine-tuning settings agree."""
    by_value = _finetune_runs(runs, param, values)
    if by_value is None:
        return None
    correct = {float(v): _query_correct(by_value[float(v)], setting) for v in values}
    found = []
    for a, b in itertools.combinations(sorted(correct), 2):
        tested = paired_test(correct[b], correct[a])
        if tested is not None:
            found.append((b, a, *tested))
    if not found:
        return None
    high, low, estimate, p_value = max(found, key=lambda f: abs(f[2]["value"]))
    return {
        "estimate": estimate,
        "p_value": p_value,
        "test": f"downstream accuracy ({setting}): {param} {high:g} − {param} {low:g}, the farthest of {len(found)} pairs, "
        "exact McNemar",
    }
