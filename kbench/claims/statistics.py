"""The claims' statistics. Each returns {"estimate", "p_value", "test"} (`estimate` a difference with
its 95% interval and n) or None when the cells lack the data. `p_value` None: the verdict rests
on the interval (a bootstrap or a mean over runs, with no exact test), outside Holm.

Five scopes (`Claim.scope`):
- "cell": f(run, **params), one run of the claim's task (one model, one dataset);
- "model": f(runs, **params), {setting label: run} of one model on one dataset (LEFT's settings);
- "entries": f(runs, **params), [run] of every task entry of one model on one dataset, told apart
  by the settings each recorded (`kbench.claims.entries`);
- "scale": f(points, **params), [(parameters, run)] of every in-scope model on one dataset (trends in size);
- "contrast": f(inside, outside, **params), [(model label, run)] of the claim's models and of every
  other model on one dataset (a claim about one family against the rest).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from kbench.metrics.rank_correlation import kendall_tau_b, spearman_exact
from kbench.metrics.uncertainty import difference_unpaired, mcnemar, wilson
from kbench.report.runs import Run

Z_95 = 1.959963984540054
Labelled = list[tuple[str, Run]]  # (model label, run) of several models


def _fisher(k1: int, n1: int, k2: int, n2: int) -> float:
    from scipy.stats import fisher_exact

    return float(fisher_exact([[k1, n1 - k1], [k2, n2 - k2]], alternative="two-sided").pvalue)


def _binomial(k: int, n: int, p: float) -> float:
    from scipy.stats import binomtest

    return float(binomtest(k, n, p).pvalue) if n else 1.0


def _shifted(k: int, n: int, reference: float) -> dict:
    """k/n − reference with the Wilson interval shifted alike."""
    low, high = wilson(k, n)
    return {"value": k / n - reference, "ci_low": low - reference, "ci_high": high - reference, "n": n, "interval": "wilson"}


def _at(block: dict, path: str, partition: str = "") -> dict | None:
    """The proportion at `path` (keys joined by "."; "*" stands for `partition`, itself a key with
    a dot such as "0.7", so it is put in after the split)."""
    for part in path.split("."):
        part = partition if part == "*" else part
        block = block.get(part) if isinstance(block, dict) else None
    return block if isinstance(block, dict) and block.get("n") and "k" in block else None


def _per_technique(run: Run) -> dict:
    return run.metrics.get("per_technique") or {}


def _prs_undefined(run: Run, name: str) -> bool:
    """Whether a technique's PRS is undefined. PRS compares the gold rank under the technique with
    the baseline's, and temperature sampling changes neither the prompt nor the weights: its rank
    is the baseline's, every failure it leaves is Tied by construction (MAPLE's Figure 2 has no τ
    rows). KEE records such a PRS as undefined (n = 0, an "undefined" reason); runs written before
    carry a computed one, told by the sampling temperature among the technique's recorded params
    (RECITE's is `recite_temperature`), or, in a run without params, by MAPLE's τ names (temp0.7)."""
    prs = _per_technique(run).get(name, {}).get("prs") or {}
    if not prs.get("n") or "undefined" in prs:
        return True
    params = (run.metrics.get("technique_params") or {}).get(name)
    return "temperature" in params if isinstance(params, dict) else name.startswith("temp")


def technique_above(run: Run, metric: str, above: Sequence[str], below: Sequence[str] = (), pick: str = "weakest") -> dict | None:
    """metric(a) − metric(b) for a in `above`, b in `below` (default: every other non-baseline
    technique of the run), reported for the pair that decides the claim: the smallest difference
    ("weakest": every a above every b holds only if it does), or the largest in size ("farthest":
    an equivalence holds only if it does), or the largest ("largest": A no better than any b holds
    only if it does). `metric` is a path in a technique's block; "*" stands for each sampling
    partition of SGR / DGR. A PRS metric leaves out the techniques whose PRS is undefined
    (`_prs_undefined`). Unpaired Newcombe interval, two-sided Fisher exact p (conservative: the
    techniques share the baseline's failures)."""
    table = _per_technique(run)
    if metric.startswith("prs."):
        table = {name: block for name, block in table.items() if not _prs_undefined(run, name)}
    if any(a not in table for a in above):
        return None
    others = [t for t in (below or [t for t in table if t != "baseline" and t not in above]) if t in table]
    pairs = []
    for a in above:
        for b in others:
            partitions = table[a].get("beyond_sampling", {}) if "*" in metric else {"": None}
            for partition in partitions:
                path = metric.replace("*", partition)
                first, second = _at(table[a], metric, partition), _at(table[b], metric, partition)
                if first and second:
                    pairs.append(
                        (a, b, path, difference_unpaired(first["k"], first["n"], second["k"], second["n"]), first, second)
                    )
    if not pairs:
        return None
    key = {"weakest": lambda p: p[3]["value"], "farthest": lambda p: -abs(p[3]["value"]), "largest": lambda p: -p[3]["value"]}
    a, b, path, estimate, first, second = min(pairs, key=key[pick])
    return {
        "estimate": estimate,
        "p_value": _fisher(first["k"], first["n"], second["k"], second["n"]),
        "test": f"{path}: {a} − {b} (the deciding pair of {len(pairs)}), two-sided Fisher exact",
    }


def prs_share(run: Run, techniques: Sequence[str], share: str, reference: float = 0.5, pick: str = "weakest") -> dict | None:
    """PRS on the failures a technique leaves unrecovered. share "moved": 1 − Tied among them;
    "worsened": Worsened among the moved ones (Improved + Worsened). Minus `reference`, with the
    Wilson interval; exact two-sided binomial p against `reference`. Of several techniques the
    deciding one (smallest value, or farthest from the reference)."""
    found = []
    for name in techniques:
        prs = _per_technique(run).get(name, {}).get("prs")
        if not prs or not prs.get("n"):
            continue
        improved, worsened, n = prs["improved"]["k"], prs["worsened"]["k"], prs["n"]
        k, total = (improved + worsened, n) if share == "moved" else (worsened, improved + worsened)
        if total:
            found.append((name, k, total, _shifted(k, total, reference)))
    if not found:
        return None
    key = (lambda f: f[3]["value"]) if pick == "weakest" else (lambda f: -abs(f[3]["value"]))
    name, k, total, estimate = min(found, key=key)
    return {
        "estimate": estimate,
        "p_value": _binomial(k, total, reference),
        "test": f"{name}: {share} share vs {reference}, exact binomial",
    }


def proportion_vs(run: Run, technique: str, metric: str, reference: float) -> dict | None:
    """metric(technique) − reference for each sampling partition ("*"), the largest one reported;
    exact two-sided binomial p."""
    block = _per_technique(run).get(technique, {})
    found = [_at(block, metric, p) for p in block.get("beyond_sampling", {"": None})]
    found = [f for f in found if f]
    if not found:
        return None
    top = max(found, key=lambda f: f["k"] / f["n"])
    return {
        "estimate": _shifted(top["k"], top["n"], reference),
        "p_value": _binomial(top["k"], top["n"], reference),
        "test": f"{technique} {metric} vs {reference}, exact binomial",
    }


def sgr_minus_dgr(run: Run, techniques: Sequence[str]) -> dict | None:
    """SGR − DGR (disjoint failure sets: Newcombe, Fisher), the smallest over techniques and partitions."""
    found = []
    for name in techniques:
        for partition, rates in _per_technique(run).get(name, {}).get("beyond_sampling", {}).items():
            sgr, dgr = _at(rates, "sgr"), _at(rates, "dgr")
            if sgr and dgr:
                found.append((name, partition, sgr, dgr, difference_unpaired(sgr["k"], sgr["n"], dgr["k"], dgr["n"])))
    if not found:
        return None
    name, partition, sgr, dgr, estimate = min(found, key=lambda f: f[4]["value"])
    return {
        "estimate": estimate,
        "p_value": _fisher(sgr["k"], sgr["n"], dgr["k"], dgr["n"]),
        "test": f"{name} at the {partition} partition: SGR − DGR, two-sided Fisher exact",
    }


def ranking_stability(run: Run, reference: float) -> dict | None:
    """The lowest Kendall tau (ranking at K against the reference K) over K, SGR / DGR and partitions,
    minus `reference`, with its bootstrap interval over base failures (no exact test)."""
    taus = [
        (f"{partition} {rate} K={k}", e)
        for partition, rates in (run.metrics.get("ranking_stability") or {}).items()
        for rate, by_k in rates.items()
        for k, e in by_k.items()
        if e.get("value") is not None and e.get("ci_low") is not None
    ]
    if not taus:
        return None
    where, low = min(taus, key=lambda t: t[1]["value"])
    estimate = {**low, **{key: low[key] - reference for key in ("value", "ci_low", "ci_high")}}
    return {"estimate": estimate, "p_value": None, "test": f"lowest tau at {where} minus {reference} (bootstrap interval)"}


def head_minus_tail(run: Run) -> dict | None:
    """accuracy(head) − accuracy(tail) of the cell's primary metric: Newcombe, Fisher exact. A
    dataset without a tail bin (a small sample) compares head with its least popular bin present,
    and the test says so."""
    bins = run.metrics.get("per_frequency_bin") or {}
    low_bin = next((b for b in ("tail", "torso") if (bins.get(b, {}).get(run.primary) or {}).get("n")), None)
    head = bins.get("head", {}).get(run.primary)
    tail = bins.get(low_bin, {}).get(run.primary) if low_bin else None
    if not head or not tail or "k" not in head or "k" not in tail or not head["n"]:
        return None
    return {
        "estimate": difference_unpaired(head["k"], head["n"], tail["k"], tail["n"]),
        "p_value": _fisher(head["k"], head["n"], tail["k"], tail["n"]),
        "test": f"two-sided Fisher exact test of head vs {low_bin}" + ("" if low_bin == "tail" else " (no tail bin in the data)"),
    }


def outdated_minus_updated_em(run: Run) -> dict | None:
    """EM(outdated answer) − EM(updated answer) on the same edited questions: Newcombe paired, McNemar."""
    from kbench.metrics.uncertainty import difference_paired
    from kbench.report.items import read_items

    edited = [r for r in read_items(run.path) if r.get("category") == "edited" and r.get("em_outdated") is not None]
    if not edited:
        return None
    outdated = {str(r["id"]): bool(r["em_outdated"]) for r in edited}
    updated = {str(r["id"]): bool(r["em_updated"]) for r in edited}
    return {
        "estimate": difference_paired(outdated, updated),
        "p_value": mcnemar(outdated, updated)["p_value"],
        "test": "exact McNemar of outdated vs updated EM",
    }


def _kendall_exact(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    """Kendall tau-b of xs with ys and its exact two-sided permutation p (every order of ys; an
    undefined tau counts as 0). None when tau itself is undefined (a constant column)."""
    tau = kendall_tau_b(xs, ys)
    if tau is None:
        return None
    perms = list(itertools.permutations(ys))
    extreme = sum(abs(kendall_tau_b(xs, list(p)) or 0.0) >= abs(tau) - 1e-12 for p in perms)
    return tau, extreme / len(perms)


def level_agreement(run: Run, level: str, reverse: bool = False) -> dict | None:
    """Kendall tau-b of Gain with another metric level over the run's techniques (the baseline left
    out; a technique without both values too), exact permutation p. `level` is a path in a
    technique's block, "*" each sampling partition: the partition with the smallest tau decides.
    `reverse`: a lower value of the level counts as higher (PRS Tied: fewer tied, more moved). A
    PRS level leaves out the techniques whose PRS is undefined (`_prs_undefined`)."""
    table = {name: block for name, block in _per_technique(run).items() if name != "baseline"}
    if level.startswith("prs."):
        table = {name: block for name, block in table.items() if not _prs_undefined(run, name)}
    partitions = next((list(b.get("beyond_sampling", {})) for b in table.values()), []) if "*" in level else [""]
    found = []
    for partition in partitions:
        path = level.replace("*", partition)
        points = []
        for block in table.values():
            gain, other = (block.get("gain") or {}).get("value"), _at(block, level, partition)
            if gain is not None and other:
                points.append((gain, -other["k"] / other["n"] if reverse else other["k"] / other["n"]))
        tested = _kendall_exact([g for g, _ in points], [v for _, v in points]) if len(points) >= 3 else None
        if tested is not None:
            found.append((path, len(points), *tested))
    if not found:
        return None
    path, n, tau, p_value = min(found, key=lambda f: f[2])
    estimate = {"value": tau, "ci_low": None, "ci_high": None, "n": n, "interval": "none (rank correlation)"}
    lower = "lower " if reverse else ""
    test = f"Kendall tau-b of Gain with {lower}{path} over {n} techniques, exact permutation p"
    return {"estimate": estimate, "p_value": p_value, "test": test}


def shallow_share(run: Run, k: int, of: int, reference: float) -> dict | None:
    """Shallow failures found by the first `k` seed-A samples among those the first `of` find (a
    proportion: the `k` samples are the first of the `of`), minus `reference`, with the Wilson
    interval and an exact two-sided binomial p; the partition farthest from the reference decides."""
    found = []
    for partition, counts in (run.metrics.get("shallow_by_k") or {}).items():
        at_k, at_of = counts.get(str(k)), counts.get(str(of))
        if at_k is not None and at_of:
            found.append((partition, at_k, at_of, _shifted(at_k, at_of, reference)))
    if not found:
        return None
    partition, at_k, at_of, estimate = min(found, key=lambda f: -abs(f[3]["value"]))
    return {
        "estimate": estimate,
        "p_value": _binomial(at_k, at_of, reference),
        "test": f"shallow failures at K = {k} of those at K = {of} (the {partition} partition) vs {reference}, exact binomial",
    }


def technique_lowest_on(
    inside: list[tuple[str, Run]], outside: list[tuple[str, Run]], technique: str, metric: str
) -> dict | None:
    """A technique's `metric` (a proportion in its block) on the claim's models against every other
    model: the highest over the claim's models − the lowest over the others, the pair that decides
    "lowest on these models" (below 0 only if every value of theirs lies below every other);
    Newcombe, two-sided Fisher exact (different models: different items). None without a model on
    each side."""

    def values(found):
        return [(label, b) for label, run in found if (b := _at(_per_technique(run).get(technique, {}), metric))]

    ours, theirs = values(inside), values(outside)
    if not ours or not theirs:
        return None
    (high, a), (low, b) = max(ours, key=lambda f: f[1]["k"] / f[1]["n"]), min(theirs, key=lambda f: f[1]["k"] / f[1]["n"])
    return {
        "estimate": difference_unpaired(a["k"], a["n"], b["k"], b["n"]),
        "p_value": _fisher(a["k"], a["n"], b["k"], b["n"]),
        "test": f"{technique} {metric}: {high} (highest of {len(ours)} in scope) − {low} (lowest of {len(theirs)} others), "
        "two-sided Fisher exact",
    }


def accuracy_size_trend(points: list[tuple[int, Run]], metric: str | None = None) -> dict | None:
    """Spearman's rho of a headline accuracy (`metric`, a proportion; default each run's primary
    metric) against parameter count over the models, with the exact two-sided permutation p (1/n!
    resolution: 3 models cannot reach 0.05, 5 can)."""
    named = [(params, run, metric or run.primary) for params, run in points]
    found = [(float(params), run.headline[name]["value"]) for params, run, name in named if params and name in run.headline]
    metric = metric or next((name for _, _, name in named if name), "the primary metric")
    if len(found) < 2:
        return None
    xs, ys = [x for x, _ in found], [y for _, y in found]
    rho, p_value = spearman_exact(xs, ys)
    estimate = {"value": rho, "ci_low": None, "ci_high": None, "n": len(found), "interval": "none (rank correlation)"}
    return {"estimate": estimate, "p_value": p_value, "test": f"Spearman rho of {metric} with size, exact permutation p"}
