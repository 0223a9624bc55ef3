"""Claim statistics of XTEVAL (one cell), of LEFT's settings (one model's cells) and of trends in
model size (every model's cell). Same contract as `kbench.claims.statistics`."""

from __future__ import annotations

import itertools
import math

from kbench.claims.statistics import Z_95, _fisher
from kbench.metrics.uncertainty import difference_unpaired, wilson
from kbench.report.runs import Run


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


def _mean_interval(figure: dict) -> dict:
    """A figure's mean over runs with a normal interval from its std (none from one run)."""
    mean, std, n = figure["mean"], figure.get("std"), figure["n"]
    half = Z_95 * std / math.sqrt(n) if std is not None and n > 1 else None
    low, high = (mean - half, mean + half) if half is not None else (None, None)
    return {"value": mean, "ci_low": low, "ci_high": high, "n": n, "interval": "normal over runs"}


def xteval_gap2(run: Run, setting: str = "iid") -> dict | None:
    """Gap 2 (Figure 8's definition) of the setting, mean over runs; the verdict reads its interval."""
    figure = _figure(run, f"settings.{setting}.gap2")
    if figure is None:
        return None
    return {"estimate": _mean_interval(figure), "p_value": None, "test": f"Gap 2 ({setting}), mean over {figure['n']} runs"}


def xteval_split_spread(run: Run, setting: str = "iid") -> dict | None:
    """The largest − the smallest split seed's mean downstream accuracy (over that seed's runs),
    with a normal (Welch) interval from the runs' spread; for an equivalence read against the set's
    margin. Picking the two extreme seeds widens the spread, so the read is conservative."""
    runs = ((run.metrics.get("settings") or {}).get(setting) or {}).get("runs") or []
    by_split: dict[int, list[float]] = {}
    for figure in runs:
        if figure.get("downstream_accuracy") is not None:
            by_split.setdefault(figure["split_seed"], []).append(float(figure["downstream_accuracy"]))
    if len(by_split) < 2:
        return None
    means = {seed: sum(values) / len(values) for seed, values in by_split.items()}
    high, low = max(means, key=lambda seed: (means[seed], -seed)), min(means, key=lambda seed: (means[seed], seed))
    value = means[high] - means[low]
    estimate = {"value": value, "ci_low": None, "ci_high": None, "n": len(runs), "interval": "normal over runs"}
    if all(len(by_split[seed]) > 1 for seed in (high, low)):
        variance = sum(_variance(by_split[seed]) / len(by_split[seed]) for seed in (high, low))
        half = Z_95 * math.sqrt(variance)
        estimate.update(ci_low=value - half, ci_high=value + half)
    test = f"downstream accuracy ({setting}): split seed {high} − split seed {low}, of {len(by_split)} split seeds"
    return {"estimate": estimate, "p_value": None, "test": test}


def _variance(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def xteval_iid_minus_ood(run: Run) -> dict | None:
    """IID − OOD downstream accuracy on the facts in both an IID and an OOD test split (paired:
    Newcombe, exact McNemar)."""
    shared = (run.metrics.get("iid_minus_ood") or {}).get("on_shared_facts")
    if not shared or not shared.get("n_shared"):
        return None
    return {"estimate": shared["difference"], "p_value": shared["p_value"], "test": "IID − OOD on shared facts, exact McNemar"}


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


def _spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(values):
        order = sorted(range(len(values)), key=lambda i: values[i])
        out = [0.0] * len(values)
        for rank, i in enumerate(order):
            out[i] = float(rank)
        return out

    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    spread = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return cov / spread if spread else 0.0


def size_trend(points: list[tuple[int, Run]], path: str) -> dict | None:
    """Spearman's rho of a figure (its mean) against parameter count over the models, with the exact
    two-sided permutation p (1/n! resolution: 3 models cannot reach 0.05, 5 can)."""
    found = [(params, _figure(run, path)) for params, run in points if params]
    found = [(params, f["mean"]) for params, f in found if f is not None]
    if len(found) < 2:
        return None
    xs, ys = [float(p) for p, _ in found], [v for _, v in found]
    rho = _spearman(xs, ys)
    perms = list(itertools.permutations(ys))
    p_value = sum(abs(_spearman(xs, list(p))) >= abs(rho) - 1e-12 for p in perms) / len(perms)
    estimate = {"value": rho, "ci_low": None, "ci_high": None, "n": len(found), "interval": "none (rank correlation)"}
    return {"estimate": estimate, "p_value": p_value, "test": f"Spearman rho of {path} with size, exact permutation p"}


def largest_minus_smallest(points: list[tuple[int, Run]], path: str) -> dict | None:
    """A figure of the largest model − that of the smallest (normal intervals over runs combined)."""
    found = [(params, _figure(run, path)) for params, run in points if params]
    found = sorted((p, f) for p, f in found if f is not None)
    if len(found) < 2:
        return None
    small, large = _mean_interval(found[0][1]), _mean_interval(found[-1][1])
    value = large["value"] - small["value"]
    if small["ci_low"] is None or large["ci_low"] is None:
        low = high = None
    else:
        half = math.hypot(large["value"] - large["ci_low"], small["value"] - small["ci_low"])
        low, high = value - half, value + half
    estimate = {"value": value, "ci_low": low, "ci_high": high, "n": len(found), "interval": "normal over runs"}
    return {"estimate": estimate, "p_value": None, "test": f"{path}: largest − smallest model"}
