"""EvolvingQA's claim statistic over the qa task's item rows, registered in
`kbench.claims.statistics.STATISTICS`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbench.claims.plan_sizes import ASSUMED, Design
from kbench.claims.statistics import statistic
from kbench.metrics.uncertainty import difference_paired, mcnemar
from kbench.report.items import read_items
from kbench.report.runs import Run

if TYPE_CHECKING:
    from kbench.claims.sets import Claim
    from kbench.evaluate.task import TaskSettings


def _design(claim: Claim, settings: TaskSettings, rows: int) -> Design:
    share = ASSUMED["edited"]
    return Design("two", f"edited ≈ {share:.0%} of {rows} questions, paired", rows * share, rows * share, share, share)


@statistic("outdated_minus_updated_em", design=_design)
def outdated_minus_updated_em(run: Run) -> dict | None:
    """EM(outdated answer) − EM(updated answer) on the same edited questions: Newcombe paired, McNemar."""
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
