"""LEFT's claim statistics over the truefalse task's settings, registered in
`kbench.claims.statistics.STATISTICS`: one model's cells on one dataset by setting (scope "model",
{setting: run}, `setting`; the plan reads the entry's settings as a cross-model report files them, `headline_name`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbench.claims.plan_sizes import Design
from kbench.claims.statistics import statistic
from kbench.metrics.uncertainty import difference_unpaired, fisher_exact_p
from kbench.report.runs import Run
from kbench.tasks.truefalse.task import TrueFalseSettings, headline_name

if TYPE_CHECKING:
    from kbench.claims.sets import Claim


def design(claim: Claim, settings: TrueFalseSettings, rows: int) -> Design:
    return Design("two", f"{rows} statements per setting", rows, rows)


def missing(claim: Claim, settings: list[TrueFalseSettings]) -> list[str]:
    """The settings the claim compares that none of the model's entries runs."""
    labels = {headline_name(s) for s in settings}
    wanted = [claim.params["first"], claim.params["second"]] if "first" in claim.params else ["closed-book"]
    return [w for w in wanted if w not in labels]


def setting(run: Run) -> str:
    """The setting a run of the task is filed under ("prior", "closed-book", "open-book")."""
    return str(run.metrics.get("setting") or "")


@statistic("setting_minus_setting", design=design, missing=missing, setting=setting)
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
        "p_value": fisher_exact_p(a["k"], a["n"], b["k"], b["n"]),
        "test": f"{first} − {second}, two-sided Fisher exact",
    }


@statistic("closed_minus_prior", design=design, missing=missing, setting=setting)
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
