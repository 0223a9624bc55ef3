"""The claims' statistics: their contract, their registry and what they share.

A statistic returns {"estimate", "p_value", "test"} (`estimate` a difference with its 95% interval
and n) or None when the cells lack the data. `p_value` None: the verdict rests on the interval (a
bootstrap or a mean over runs, with no exact test), outside Holm.

Five scopes (`Claim.scope`), each with its signature:
- "cell": f(run, **params), one run of the claim's task (one model, one dataset);
- "model": f(runs, **params), {setting label: run} of one model on one dataset (LEFT's settings);
- "entries": f(runs, **params), [run] of every task entry of one model on one dataset, told apart
  by the settings each recorded (the same task run at two or more settings);
- "scale": f(points, **params), [(parameters, run)] of every in-scope model on one dataset (trends in size);
- "contrast": f(inside, outside, **params), [(model label, run)] of the claim's models and of every
  other model on one dataset (a claim about one family against the rest).

Each task's statistics live in its folder, `kbench/tasks/<name>/claims.py`, registered by name with
`@statistic(name, ...)` beside what `kbench claims plan` needs to size them; the claim sets name
them (`Claim.statistic`). Here are only the statistics that read no task's knowledge: trends in size
of a figure the claim names by its path in the run's metrics (`path`, `metric`: the claim set's
JSON, never this code), and the helpers the tasks' statistics share.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from kbench.metrics.rank_correlation import kendall_tau_b, spearman_exact
from kbench.metrics.uncertainty import BOOTSTRAP_SEED, binomial_p, difference_paired, mcnemar, wilson
from kbench.registry import Registry
from kbench.report.runs import Run

if TYPE_CHECKING:
    from kbench.claims.plan_sizes import Design
    from kbench.claims.sets import Claim
    from kbench.evaluate.task import TaskSettings

# A p-value under Holm over tens of tests needs a finer floor than a task's 1,000 resamples
# (1/1001); 10,000 vectorised resamples cost well under a second per cell.
CLAIM_RESAMPLES = 10_000
CLAIM_SEED = BOOTSTRAP_SEED
Labelled = list[tuple[str, Run]]  # (model label, run) of several models
Measure = TypeVar("Measure", bound=Callable[..., "dict | None"])


@dataclass(frozen=True)
class Statistic:
    """A claim statistic as the registry holds it. `measure` computes it (its scope's signature); the
    rest serves `kbench claims plan` and the readings, None where it does not apply:
    - `design(claim, settings, rows)`: the `Design` of one cell's test from a task entry's settings
      (without one the plan says it has no size plan for the statistic);
    - `lacks(claim, settings)`: what a task entry lacks for the claim (None: it has it), for a
      statistic that reads only the entries that run what it compares (KEE's techniques);
    - `missing(claim, settings)`: the settings the claim compares across the entries of a column
      (each entry's settings given) that none of them runs;
    - `setting(run)`: scope "model": the setting a run is filed under (its key in {setting: run});
    - `rowless`: its n is no dataset's rows (a rank correlation over models or techniques);
    - `readings(run)`: {reading: the run under it} where the run records several readings of a rule
      its paper leaves open (`kbench.claims.readings`)."""

    measure: Callable[..., dict | None]
    design: Callable[[Claim, TaskSettings, int], Design] | None = None
    lacks: Callable[[Claim, TaskSettings], str | None] | None = None
    missing: Callable[[Claim, list[TaskSettings]], list[str]] | None = None
    setting: Callable[[Run], str] | None = None
    rowless: bool = False
    readings: Callable[[Run], dict[str, Run]] | None = None


# found in the task folders (`kbench/tasks/<name>/claims.py`) on the first lookup
STATISTICS: Registry[Statistic] = Registry("claim statistic", package="kbench.tasks")


def statistic(name: str, **hooks: Any) -> Callable[[Measure], Measure]:
    """Register the decorated function as the claim statistic `name`, with the `Statistic` hooks given."""

    def register(measure: Measure) -> Measure:
        STATISTICS.add(name, Statistic(measure, **hooks))
        return measure

    return register


def shifted(k: int, n: int, reference: float) -> dict:
    """k/n − reference with the Wilson interval shifted alike."""
    low, high = wilson(k, n) or (0.0, 0.0)  # n > 0 wherever this is called: the Wilson interval exists
    return {"value": k / n - reference, "ci_low": low - reference, "ci_high": high - reference, "n": n, "interval": "wilson"}


def against_reference(k: int, n: int, reference: float, test: str) -> dict:
    """A statistic's result for a proportion k/n against a reference: the shifted Wilson estimate
    (`shifted`) and the exact two-sided binomial p."""
    return {"estimate": shifted(k, n, reference), "p_value": binomial_p(k, n, reference), "test": test}


def proportion_at(block: dict, path: str, partition: str = "") -> dict | None:
    """The proportion ({"k", "n"}) at `path` in `block` (keys joined by "."; "*" stands for
    `partition`, itself a key with a dot such as "0.7", so it is put in after the split)."""
    found: Any = block
    for part in path.split("."):
        part = partition if part == "*" else part
        found = found.get(part) if isinstance(found, dict) else None
    return found if isinstance(found, dict) and found.get("n") and "k" in found else None


def paired_test(first: dict[str, bool], second: dict[str, bool]) -> tuple[dict, float] | None:
    """Newcombe's paired interval of first − second on the items both have, and the exact McNemar p;
    None when they share no item."""
    if not set(first) & set(second):
        return None
    return difference_paired(first, second), mcnemar(first, second)["p_value"]


def bootstrap_p(replicates: list[float]) -> float:
    """Two-sided percentile-bootstrap p of "the figure is 0": twice the smaller share of replicates
    at or beyond 0 on either side, each count + 1 over resamples + 1 (never 0), at most 1."""
    below = sum(r <= 0 for r in replicates)
    above = sum(r >= 0 for r in replicates)
    return min(1.0, 2 * (1 + min(below, above)) / (1 + len(replicates)))


def kendall_exact(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    """Kendall tau-b of xs with ys and its exact two-sided permutation p (every order of ys; an
    undefined tau counts as 0). None when tau itself is undefined (a constant column)."""
    tau = kendall_tau_b(xs, ys)
    if tau is None:
        return None
    perms = list(itertools.permutations(ys))
    extreme = sum(abs(kendall_tau_b(xs, list(p)) or 0.0) >= abs(tau) - 1e-12 for p in perms)
    return tau, extreme / len(perms)


def size_label(parameters: int) -> str:
    return f"{parameters / 1e9:.3g}B" if parameters >= 1e9 else f"{parameters / 1e6:.4g}M"


def sized_points(points: list[tuple[int, Run]], min_sizes: int) -> list[tuple[int, Run]] | None:
    """The points with a parameter count, smallest first (ties by model name), or None with fewer
    than `min_sizes` distinct sizes: a trend read on fewer sizes than the claim needs decides
    nothing, and the claim is left without data rather than given a verdict on too little."""
    found = sorted(((params, run) for params, run in points if params), key=lambda p: (p[0], p[1].model_name))
    return found if len({params for params, _ in found}) >= min_sizes else None


def endpoints(found: list[tuple[int, Run]]) -> str:
    """The largest and the smallest model of sized points, with their parameter counts."""
    (small, first), (large, last) = found[0], found[-1]
    return f"{last.model_name} ({size_label(large)} parameters) − {first.model_name} ({size_label(small)})"


def _figure(run: Run, path: str) -> dict | None:
    """The figure at `path` in the run's metrics: a block with a "mean" (a mean over runs or seeds)."""
    block: Any = run.metrics
    for part in path.split("."):
        block = block.get(part) if isinstance(block, dict) else None
    return block if isinstance(block, dict) and block.get("mean") is not None else None


def _rank_design(claim: Claim, settings: TaskSettings, rows: int) -> Design:
    from kbench.claims.plan_sizes import Design

    return Design("rank", "models", 0)  # a rank correlation over the models


@statistic("size_trend", design=_rank_design, rowless=True)
def size_trend(points: list[tuple[int, Run]], path: str, min_sizes: int = 5) -> dict | None:
    """Spearman's rho of a figure (its mean, at `path` in the run's metrics) against parameter count
    over the models, with the exact two-sided permutation p (1/n! resolution: a perfect order of 4
    sizes gives 2/24 = 0.083, of 5 sizes 2/120 = 0.017, so `min_sizes` 5 is the fewest that can
    decide). The test names the smallest and the largest model."""
    sized = [(params, run, _figure(run, path)) for params, run in sized_points(points, min_sizes) or []]
    found = [(params, run, f["mean"]) for params, run, f in sized if f is not None]
    if len({params for params, _, _ in found}) < max(min_sizes, 2):
        return None
    xs, ys = [float(p) for p, _, _ in found], [v for _, _, v in found]
    rho, p_value = spearman_exact(xs, ys)
    estimate = {"value": rho, "ci_low": None, "ci_high": None, "n": len(found), "interval": "none (rank correlation)"}
    ends = f"{found[0][1].model_name} ({size_label(found[0][0])}) to {found[-1][1].model_name} ({size_label(found[-1][0])})"
    test = f"Spearman rho of {path} with size over {len(found)} models, {ends}, exact permutation p"
    return {"estimate": estimate, "p_value": p_value, "test": test}


@statistic("accuracy_size_trend", design=_rank_design, rowless=True)
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
