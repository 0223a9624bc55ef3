"""Test claim sets over a suite folder: per model, then across models.

Per cell (a model's run of the claim's task on one dataset) the claim's statistic gives a
difference with its 95% interval and a p-value. Verdicts at alpha = 0.05:
- a directional claim ("A > B"): supported when the Holm-adjusted p is below alpha and the
  difference has the claimed sign, contradicted when it is below alpha with the other sign,
  inconclusive otherwise. Holm runs over every directional test of the set on this suite.
- an equivalence claim: supported when the 95% interval lies inside +-margin (the set's declared
  margin), contradicted when it lies entirely outside, inconclusive otherwise; a non-significant
  difference never supports it. Its verdict rests on the interval, so it takes no part in Holm.
Across models, per (task, dataset): an exact one-sided sign test over the models (directional:
the sign of each model's difference; equivalence: supported against contradicted models). One
side reaches alpha only with 5 or more models, so with fewer the verdict is "inconclusive across
models (n models)", beside the per-model verdicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from kbench.claims.sets import CLAIM_SETS, Claim, ClaimSet, claim_set
from kbench.claims.statistics import STATISTICS
from kbench.errors import UserError
from kbench.report.runs import load_run
from kbench.suite.status import read_suite_json

ALPHA = 0.05
MIN_MODELS = 5  # 0.5^5 = 0.031 < 0.05: the fewest models a one-sided sign test can decide with


@dataclass
class CellTest:
    model: str
    column: str  # "task / dataset"
    result: dict  # the statistic's {"estimate", "p_value", "metric", "test"}
    p_holm: float | None = None
    verdict: str = "inconclusive"


@dataclass
class ClaimResult:
    claim: Claim
    cells: list[CellTest] = field(default_factory=list)
    across: dict[str, str] = field(default_factory=dict)  # column -> the verdict across models, in words
    skipped: list[str] = field(default_factory=list)  # cells without the data the statistic needs


def test_suite(folder: Path, set_names: list[str]) -> list[tuple[ClaimSet, list[ClaimResult]]]:
    document = read_suite_json(folder)
    task_of = {t.get("name") or t["task"]: t["task"] for t in document["suite"]["tasks"]}
    present = set(task_of.values())
    if set_names:
        sets = [claim_set(name) for name in set_names]
        for chosen in sets:
            lacking = sorted({c.task for c in chosen.claims} - present)
            if lacking:
                raise UserError(f"--set {chosen.name}: its claims need task(s) {', '.join(lacking)}, which the suite lacks")
    else:
        sets = [s for s in CLAIM_SETS.values() if {c.task for c in s.claims} & present]
        if not sets:
            raise UserError(f"{folder}: no packaged claim set reads the suite's tasks ({', '.join(sorted(present))})")
    done = [c for c in document["cells"].values() if c["status"] == "done"]
    return [(chosen, _test_set(chosen, folder, done, task_of)) for chosen in sets]


def _test_set(chosen: ClaimSet, folder: Path, done: list[dict], task_of: dict[str, str]) -> list[ClaimResult]:
    results = []
    for claim in chosen.claims:
        outcome = ClaimResult(claim)
        for cell in (c for c in done if task_of.get(c["task"]) == claim.task):
            found = STATISTICS[claim.statistic](load_run(folder / cell["run_dir"]))
            column = f"{cell['task']} / {cell['dataset']}"
            if found is None or found["estimate"].get("value") is None:
                outcome.skipped.append(f"{cell['model']} on {column}")
            else:
                outcome.cells.append(CellTest(cell["model"], column, found))
        results.append(outcome)
    _holm([t for r in results if r.claim.direction == "greater" for t in r.cells])
    for outcome in results:
        for test in outcome.cells:
            test.verdict = _verdict(outcome.claim, test)
        for column in dict.fromkeys(t.column for t in outcome.cells):
            outcome.across[column] = _across(outcome.claim, [t for t in outcome.cells if t.column == column])
    return results


def _holm(tests: list[CellTest]) -> None:
    order = sorted(range(len(tests)), key=lambda i: (tests[i].result["p_value"], i))
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(tests) - rank) * tests[i].result["p_value"]))
        tests[i].p_holm = running


def _verdict(claim: Claim, test: CellTest) -> str:
    estimate = test.result["estimate"]
    if claim.direction == "equivalent":
        low, high, margin = estimate["ci_low"], estimate["ci_high"], claim.margin
        if -margin <= low and high <= margin:
            return "supported"
        return "contradicted" if low > margin or high < -margin else "inconclusive"
    if test.p_holm is not None and test.p_holm < ALPHA:
        return "supported" if estimate["value"] > 0 else "contradicted"
    return "inconclusive"


def one_sided_sign_p(plus: int, n: int) -> float:
    """P(at least `plus` of `n` fair coin flips come up plus): the exact one-sided sign test."""
    return math.fsum(math.comb(n, i) for i in range(plus, n + 1)) / 2**n if n else 1.0


def _across(claim: Claim, tests: list[CellTest]) -> str:
    models = len({t.model for t in tests})
    if claim.direction == "equivalent":
        plus = sum(t.verdict == "supported" for t in tests)
        minus = sum(t.verdict == "contradicted" for t in tests)
    else:
        plus = sum(t.result["estimate"]["value"] > 0 for t in tests)
        minus = sum(t.result["estimate"]["value"] < 0 for t in tests)
    holds = sum(t.verdict == "supported" for t in tests)
    text = f"holds for {holds} of {models} model{'s' if models != 1 else ''}"
    if models < MIN_MODELS:
        return f"{text}; inconclusive across models ({models} model{'s' if models != 1 else ''})"
    p_for, p_against = one_sided_sign_p(plus, plus + minus), one_sided_sign_p(minus, plus + minus)
    verdict = "supported" if p_for < ALPHA else "contradicted" if p_against < ALPHA else "inconclusive"
    return (
        f"{text}; sign test across models ({plus} for, {minus} against) p = {min(p_for, p_against):.3g}: {verdict} across models"
    )
