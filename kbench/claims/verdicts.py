"""Test claim sets over a suite folder: per model, then across models.

Per cell (a model's run of the claim's task on one dataset) the claim's statistic gives a
difference with its 95% interval and a p-value. Verdicts at alpha = 0.05:
- a directional claim ("A > B", or "< 0"): supported when the Holm-adjusted p is below alpha and
  the difference has the claimed sign, contradicted when it is below alpha with the other sign,
  inconclusive otherwise. Holm runs over every directional test of the set on this suite that has
  a p-value; a statistic with only an interval (a bootstrap, a mean over runs) is decided by its
  95% interval alone: supported when it excludes 0 on the claimed side, contradicted on the other,
  inconclusive when it has zero width (every bootstrap resample alike, as with a handful of items).
- an equivalence claim: supported when the 95% interval lies inside +-margin (the set's declared
  margin), contradicted when it lies entirely outside, inconclusive otherwise; a non-significant
  difference never supports it. Its verdict rests on the interval, so it takes no part in Holm.
- a non-superiority claim ("not_greater": A does no better than B, "comparable to or lags
  behind"): supported when the upper 95% bound of A − B lies below +margin, contradicted only
  when the lower bound lies above +margin (A clearly better), inconclusive otherwise; a significant
  drop supports it. Interval-based, outside Holm.
A "scale" claim (a trend in size) is one test over every in-scope model's cell of a dataset; an
"entries" claim reads every task entry of one model on one dataset (DeCoRe at two head counts,
XTEVAL at three learning rates); a "contrast" claim reads the cells of the claim's models against
those of every other model on one dataset (MAPLE-11: CAA's lowest Gain is on Qwen2.5).
Scope (`kbench.claims.sets`): a model the claim is not about is listed as "outside the claim's
scope" with no verdict, and a model without the setting the claim requires (continual
pretraining) as "setting not met"; neither is tested nor counted across models. Beside an
out-of-scope model of a per-model claim, "does it generalise?" reports the statistic there and
what it would say at its unadjusted p: outside Holm, and no verdict on the paper.
Readings (`kbench.claims.readings`): where a run records SGR / DGR of temperature sampling under
several readings of MAPLE's unstated recovery rule, a statistic that reads them is computed under
each, Holm is run again over the set with every test under that reading, and a cell whose
verdicts differ between readings reads "depends on the reading" (each reading's verdict is kept).
Across models, per (task, dataset): an exact one-sided sign test over the in-scope models (directional:
the sign of each model's difference; equivalence and non-superiority: supported against
contradicted models). One side reaches alpha only with 5 or more models, so with fewer the
verdict is "inconclusive across models (n models)", beside the per-model verdicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from kbench.claims.readings import results_by_reading
from kbench.claims.sets import Claim, ClaimSet, check_tasks, claim_set, claim_sets, in_scope, provides
from kbench.claims.statistics import STATISTICS, Statistic
from kbench.errors import UserError
from kbench.report.runs import Run, load_run
from kbench.suite.status import read_suite_json

ALPHA = 0.05
MIN_MODELS = 5  # 0.5^5 = 0.031 < 0.05: the fewest models a one-sided sign test can decide with
OUTSIDE = "outside the claim's scope"
NOT_MET = "setting not met"
DEPENDS = "depends on the reading"


@dataclass
class CellTest:
    model: str
    column: str  # "task / dataset"
    result: dict  # the statistic's {"estimate", "p_value", "test"}
    p_holm: float | None = None
    verdict: str = "inconclusive"
    readings: dict[str, dict] = field(default_factory=dict)  # reading -> the statistic's result under it
    reading_holm: dict[str, float | None] = field(default_factory=dict)
    reading_verdicts: dict[str, str] = field(default_factory=dict)


@dataclass
class ClaimResult:
    claim: Claim
    cells: list[CellTest] = field(default_factory=list)
    across: dict[str, str] = field(default_factory=dict)  # column -> the verdict across models, in words
    skipped: list[str] = field(default_factory=list)  # cells without the data the statistic needs
    outside: list[tuple[str, str]] = field(default_factory=list)  # (model, column) the claim is not about
    not_met: list[tuple[str, str]] = field(default_factory=list)  # (model, column) without the required setting
    # (model, column) outside the scope -> (the statistic there, what it would say at unadjusted p)
    beyond: dict[tuple[str, str], tuple[dict, str]] = field(default_factory=dict)


def test_suite(folder: Path, set_names: list[str]) -> list[tuple[ClaimSet, list[ClaimResult]]]:
    document = read_suite_json(folder)
    task_of = {t.get("name") or t["task"]: t["task"] for t in document["suite"]["tasks"]}
    present = set(task_of.values())
    if set_names:
        sets = [claim_set(name) for name in set_names]
        for chosen in sets:
            check_tasks(chosen, present, f"--set {chosen.name}")
    else:
        sets = [s for s in claim_sets().values() if s.tasks & present]
        if not sets:
            raise UserError(f"{folder}: no packaged claim set reads the suite's tasks ({', '.join(sorted(present))})")
    done = [c for c in document["cells"].values() if c["status"] == "done"]
    rows = document.get("models", {})
    return [(chosen, _test_set(chosen, folder, done, task_of, rows)) for chosen in sets]


Cells = list[tuple[dict, Run]]  # (suite.json's cell, its run)


def _groups(claim: Claim, runs: Cells, sizes: dict, others: Cells) -> list[tuple[str, str, list]]:
    """(model, column, the runs the statistic reads) for each test of the claim's scope; `others`
    (scope "contrast"): the runs of the models outside the claim's scope."""
    column = lambda cell: f"{cell['task']} / {cell['dataset']}"  # noqa: E731
    if claim.scope == "cell":
        return [(cell["model"], column(cell), [run]) for cell, run in runs]
    if claim.scope in ("model", "entries"):  # one model's settings (or task entries) of the task on one dataset
        keys = dict.fromkeys((cell["model"], cell["dataset"]) for cell, _ in runs)
        return [
            (model, f"{claim.task} / {dataset}", [r for c, r in runs if (c["model"], c["dataset"]) == (model, dataset)])
            for model, dataset in keys
        ]
    columns = dict.fromkeys(column(cell) for cell, _ in runs)
    if claim.scope == "contrast":  # ([(label, run)] of the claim's models, [(label, run)] of the others)
        pick = lambda found, col: [(c["model"], r) for c, r in found if column(c) == col]  # noqa: E731
        return [
            (f"{len(pick(runs, col))} in scope vs {len(pick(others, col))} others", col, [pick(runs, col), pick(others, col)])
            for col in columns
        ]
    models = len({cell["model"] for cell, _ in runs})
    return [
        (f"trend over {models} models", col, [(sizes.get(c["model"]), r) for c, r in runs if column(c) == col]) for col in columns
    ]


def _column(claim: Claim, cell: dict) -> str:
    """The column a cell's test is reported under (as `_groups` names it)."""
    return f"{claim.task if claim.scope in ('model', 'entries') else cell['task']} / {cell['dataset']}"


def _found(claim: Claim, statistic: Statistic, read: list) -> dict | None:
    """The statistic on one group of runs (`_groups`), None without the data it needs."""
    fn = statistic.measure
    if claim.scope == "cell":
        found = fn(read[0], **claim.params)
    elif claim.scope == "model":
        if statistic.setting is None:
            raise ValueError(f"claim statistic {claim.statistic!r} of scope 'model' names no `setting` of a run")
        found = fn({statistic.setting(r): r for r in read}, **claim.params)
    else:  # "entries": [run], told apart by the settings each recorded; "scale": [(parameters, run)]; "contrast"
        found = fn(*read, **claim.params) if claim.scope == "contrast" else fn(read, **claim.params)
    return None if found is None or found["estimate"].get("value") is None else found


def _measure(claim: Claim, folder: Path, cells: list[dict], rows: dict) -> ClaimResult:
    """The claim's statistic on every cell, model or dataset its scope reads: the models it is
    about and that provide the setting it requires; the others are listed, untested (a per-model
    claim's statistic is still computed on a model outside its scope: "does it generalise?")."""
    outcome, statistic = ClaimResult(claim), STATISTICS.get(claim.statistic)
    fn = statistic.measure
    runs: Cells = []
    others: Cells = []
    for cell in cells:
        model, row = cell["model"], rows.get(cell["model"])
        where = (model, _column(claim, cell))
        if not in_scope(claim, model, row):
            others.append((cell, load_run(folder / cell["run_dir"])))
            if claim.scope != "contrast" and where not in outcome.outside:
                outcome.outside.append(where)
        elif claim.requires and not provides(claim.requires, row):
            if where not in outcome.not_met:
                outcome.not_met.append(where)
        else:
            runs.append((cell, load_run(folder / cell["run_dir"])))
    sizes = {label: (row or {}).get("parameters") for label, row in rows.items()}
    for model, column, read in _groups(claim, runs, sizes, others):
        found = _found(claim, statistic, read)
        if found is None:
            outcome.skipped.append(f"{model} on {column}")
            continue
        test = CellTest(model, column, found)
        if claim.scope == "cell" and statistic.readings:  # e.g. KEE's SGR / DGR under each reading of the recovery rule
            test.readings = results_by_reading(statistic.readings(read[0]), lambda run: fn(run, **claim.params), found)
        outcome.cells.append(test)
    if claim.scope in ("cell", "model", "entries"):  # does it generalise? Beside the verdicts, never one of them
        for model, column, read in _groups(claim, others, sizes, []):
            if (found := _found(claim, statistic, read)) is not None:
                outcome.beyond[(model, column)] = (found, _verdict(claim, found, found["p_value"]))
    return outcome


def _test_set(chosen: ClaimSet, folder: Path, done: list[dict], task_of: dict[str, str], rows: dict) -> list[ClaimResult]:
    results = []
    for claim in chosen.claims:
        if not claim.measurable:
            results.append(ClaimResult(claim))
            continue
        results.append(_measure(claim, folder, [c for c in done if task_of.get(c["task"]) == claim.task], rows))
    family = [t for r in results if r.claim.direction in DIRECTIONAL for t in r.cells if t.result["p_value"] is not None]
    for test, p_holm in zip(family, _holm([t.result["p_value"] for t in family])):
        test.p_holm = p_holm
    for reading in dict.fromkeys(name for r in results for t in r.cells for name in t.readings):
        # the whole set under this reading: a test without it keeps its own p
        under = [t.readings.get(reading, t.result)["p_value"] for t in family]
        for test, p_holm in zip(family, _holm(under)):
            test.reading_holm[reading] = p_holm
    for outcome in results:
        for test in outcome.cells:
            test.verdict = _verdict(outcome.claim, test.result, test.p_holm)
            test.reading_verdicts = {
                name: _verdict(outcome.claim, found, test.reading_holm.get(name)) for name, found in test.readings.items()
            }
            if any(v != test.verdict for v in test.reading_verdicts.values()):
                test.verdict = DEPENDS
        for column in dict.fromkeys(t.column for t in outcome.cells if outcome.claim.scope not in ("scale", "contrast")):
            outcome.across[column] = _across(outcome.claim, [t for t in outcome.cells if t.column == column])
    return results


DIRECTIONAL = ("greater", "less")  # the directions Holm adjusts; the others rest on an interval


def _holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given."""
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(sorted(range(len(p_values)), key=lambda i: (p_values[i], i))):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _verdict(claim: Claim, result: dict, p_holm: float | None) -> str:
    estimate = result["estimate"]
    if claim.direction == "not_greater":  # non-superiority: only a clearly better A contradicts it
        low, high, margin = estimate.get("ci_low"), estimate.get("ci_high"), claim.margin or 0.0
        if low is None or high is None:
            return "inconclusive"
        return "supported" if high < margin else "contradicted" if low > margin else "inconclusive"
    if claim.direction == "equivalent":
        low, high, margin = estimate["ci_low"], estimate["ci_high"], claim.margin or 0.0  # declared (`Claim`)
        if low is None:
            return "inconclusive"
        if -margin <= low and high <= margin:
            return "supported"
        return "contradicted" if low > margin or high < -margin else "inconclusive"
    sign = 1 if claim.direction == "greater" else -1
    if result["p_value"] is None:  # an interval with no exact test: it decides alone
        low, high = estimate.get("ci_low"), estimate.get("ci_high")
        if low is None or low == high:  # a zero-width bootstrap (every resample alike: a handful of items) decides nothing
            return "inconclusive"
        claimed, opposite = (low > 0, high < 0) if sign > 0 else (high < 0, low > 0)
        return "supported" if claimed else "contradicted" if opposite else "inconclusive"
    if p_holm is not None and p_holm < ALPHA and estimate["value"] != 0:
        return "supported" if sign * estimate["value"] > 0 else "contradicted"
    return "inconclusive"


def one_sided_sign_p(plus: int, n: int) -> float:
    """P(at least `plus` of `n` fair coin flips come up plus): the exact one-sided sign test."""
    return math.fsum(math.comb(n, i) for i in range(plus, n + 1)) / 2**n if n else 1.0


def _across(claim: Claim, tests: list[CellTest]) -> str:
    models = len({t.model for t in tests})
    if claim.direction not in DIRECTIONAL:
        plus = sum(t.verdict == "supported" for t in tests)
        minus = sum(t.verdict == "contradicted" for t in tests)
    else:
        sign = 1 if claim.direction == "greater" else -1
        plus = sum(sign * t.result["estimate"]["value"] > 0 for t in tests)
        minus = sum(sign * t.result["estimate"]["value"] < 0 for t in tests)
    holds = sum(t.verdict == "supported" for t in tests)
    text = f"holds for {holds} of {models} model{'s' if models != 1 else ''}"
    if models < MIN_MODELS:
        return f"{text}; inconclusive across models ({models} model{'s' if models != 1 else ''})"
    p_for, p_against = one_sided_sign_p(plus, plus + minus), one_sided_sign_p(minus, plus + minus)
    verdict = "supported" if p_for < ALPHA else "contradicted" if p_against < ALPHA else "inconclusive"
    return (
        f"{text}; sign test across models ({plus} for, {minus} against) p = {min(p_for, p_against):.3g}: {verdict} across models"
    )
