"""Claim statistics of XTEVAL (one cell), of LEFT's settings (one model's cells) and of trends in
model size (every in-scope model's cell). Same contract as `kbench.claims.statistics`. XTEVAL's
downstream figures are read from the run's query rows and drawn with the task's own two-level
bootstrap (`kbench.metrics.clustered.gap_replicates`: runs, then items), seeded; IID − OOD with a
cluster bootstrap over relations and a bootstrap p, which puts it under Holm
(docs/xteval-statistics.md, "The claims")."""

from __future__ import annotations

from kbench.claims.statistics import _fisher
from kbench.metrics.clustered import RunCounts, bootstrap_estimate, gap_replicates, headline_values, run_counts
from kbench.metrics.rank_correlation import spearman_exact
from kbench.metrics.uncertainty import BOOTSTRAP_SEED, difference_unpaired, wilson
from kbench.report.items import read_items
from kbench.report.runs import Run

# A p-value under Holm over tens of tests needs a finer floor than the task's 1,000 resamples
# (1/1001); 10,000 vectorised resamples cost well under a second per cell.
CLAIM_RESAMPLES = 10_000
CLAIM_SEED = BOOTSTRAP_SEED


def _figure(run: Run, path: str) -> dict | None:
    block = run.metrics
    for part in path.split("."):
        block = block.get(part) if isinstance(block, dict) else None
    return block if isinstance(block, dict) and block.get("mean") is not None else None


def xteval_gap1(run: Run) -> dict | None:
    """Gap 1 = 1 − acc_D of the first extraction seed: the share of D the model does not predict,
    Wilson interval. One unpredicted fact proves Gap 1 > 0, so p is 0 then (1 with none)."""
    seeds = ((run.metrics.get("extraction") or {}).get("seeds")) or []
    if not seeds or not seeds[0].get("n_probed"):
        return None
    n = seeds[0]["n_probed"]
    k = n - seeds[0]["n_known"]
    low, high = wilson(k, n)
    estimate = {"value": k / n, "ci_low": low, "ci_high": high, "n": n, "k": k, "interval": "wilson"}
    return {"estimate": estimate, "p_value": 0.0 if k else 1.0, "test": "Gap 1 > 0: facts of D not predicted (seed 1)"}


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


def bootstrap_p(replicates: list[float]) -> float:
    """Two-sided percentile-bootstrap p of "the figure is 0": twice the smaller share of replicates
    at or beyond 0 on either side, each count + 1 over resamples + 1 (never 0), at most 1."""
    below = sum(r <= 0 for r in replicates)
    above = sum(r >= 0 for r in replicates)
    return min(1.0, 2 * (1 + min(below, above)) / (1 + len(replicates)))


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


def setting_minus_setting(runs: dict[str, Run], first: str, second: str) -> dict | None:
    """accuracy(setting `first`) − accuracy(setting `second`) of one model on one dataset
    (Newcombe, Fisher exact: unpaired, conservative for shared statements)."""
    if first not in runs or second not in runs:
        return None
    a, b = (runs[s].metrics.get("overall", {}).get("accuracy") or {} for s in (first, second))
    if not a.get("n") or not b.get("n"):
        return None
    return {
        "estimate": difference_unpaired(a["k"], a["n"], b["k"], b["n"]),
        "p_value": _fisher(a["k"], a["n"], b["k"], b["n"]),
        "test": f"{first} − {second}, two-sided Fisher exact",
    }


def closed_minus_prior(runs: dict[str, Run]) -> dict | None:
    """Closed book after reading − prior knowledge on the same statements (the closed-book cell's
    paired before/after difference)."""
    run = runs.get("closed-book")
    block = (run.metrics.get("before_after") if run else None) or {}
    if not block.get("difference"):
        return None
    return {
        "estimate": block["difference"],
        "p_value": (block.get("paired_test") or {}).get("p_value"),
        "test": "closed-book − prior, paired",
    }


def _size(parameters: int) -> str:
    return f"{parameters / 1e9:.3g}B" if parameters >= 1e9 else f"{parameters / 1e6:.4g}M"


def _sizes(points: list[tuple[int, Run]], min_sizes: int) -> list[tuple[int, Run]] | None:
    """The points with a parameter count, smallest first (ties by model name), or None with fewer
    than `min_sizes` distinct sizes: a trend read on fewer sizes than the claim needs decides
    nothing, and the claim is left without data rather than given a verdict on too little."""
    found = sorted(((params, run) for params, run in points if params), key=lambda p: (p[0], p[1].model_name))
    return found if len({params for params, _ in found}) >= min_sizes else None


def _endpoints(found: list[tuple[int, Run]]) -> str:
    (small, first), (large, last) = found[0], found[-1]
    return f"{last.model_name} ({_size(large)} parameters) − {first.model_name} ({_size(small)})"


def size_trend(points: list[tuple[int, Run]], path: str, min_sizes: int = 5) -> dict | None:
    """Spearman's rho of a figure (its mean) against parameter count over the models, with the exact
    two-sided permutation p (1/n! resolution: a perfect order of 4 sizes gives 2/24 = 0.083, of 5
    sizes 2/120 = 0.017, so `min_sizes` 5 is the fewest that can decide). The test names the
    smallest and the largest model."""
    found = _sizes(points, min_sizes)
    found = [(params, run, _figure(run, path)) for params, run in found or []]
    found = [(params, run, f["mean"]) for params, run, f in found if f is not None]
    if len({params for params, _, _ in found}) < max(min_sizes, 2):
        return None
    xs, ys = [float(p) for p, _, _ in found], [v for _, _, v in found]
    rho, p_value = spearman_exact(xs, ys)
    estimate = {"value": rho, "ci_low": None, "ci_high": None, "n": len(found), "interval": "none (rank correlation)"}
    ends = f"{found[0][1].model_name} ({_size(found[0][0])}) to {found[-1][1].model_name} ({_size(found[-1][0])})"
    test = f"Spearman rho of {path} with size over {len(found)} models, {ends}, exact permutation p"
    return {"estimate": estimate, "p_value": p_value, "test": test}


def largest_minus_smallest(points: list[tuple[int, Run]], path: str, min_sizes: int = 5) -> dict | None:
    """A headline figure (`path` settings.<setting>.<figure>) of the largest model − that of the
    smallest, with the task's two-level bootstrap (runs, then items) drawn for each model apart
    (unpaired: each model has its own D^theta and test queries). Interval only (an equivalence or a
    non-superiority read); `min_sizes` as for `size_trend`, so both parts of XTEVAL-14 read the
    same sizes. The test names both models with their parameter counts."""
    _, setting, figure = path.split(".")
    found = _sizes(points, min_sizes)
    if found is None:
        return None
    ends = [(params, run, _downstream(run, setting)) for params, run in (found[0], found[-1])]
    if any(drawn is None for _, _, drawn in ends):
        return None
    values, replicates = [], []
    for i, (_, _, (_, counts, known)) in enumerate(ends):
        values.append(headline_values(counts, known)[figure])
        replicates.append(_replicates(counts, known, setting, figure, CLAIM_SEED + i))
    differences = [large - small for small, large in zip(*replicates)]
    estimate = bootstrap_estimate(values[1] - values[0], differences, len({p for p, _ in found}), CLAIM_SEED)
    test = f"{path}: {_endpoints(found)}, of {len({p for p, _ in found})} sizes; two-level bootstrap per model, unpaired"
    return {"estimate": estimate, "p_value": None, "test": test}
