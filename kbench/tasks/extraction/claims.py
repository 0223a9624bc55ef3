"""The extraction task's claim statistic (popularity: head − tail frequency bin), registered in
`kbench.claims.statistics.STATISTICS`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbench.claims.plan_sizes import ASSUMED, Design
from kbench.claims.statistics import statistic
from kbench.metrics.uncertainty import difference_unpaired, fisher_exact_p
from kbench.report.runs import Run

if TYPE_CHECKING:
    from kbench.claims.sets import Claim
    from kbench.evaluate.task import TaskSettings


def _design(claim: Claim, settings: TaskSettings, rows: int) -> Design:
    share = ASSUMED["bin"]
    return Design("two", f"head and tail ≈ {share:.0%} each of {rows} facts", rows * share, rows * share, share, share)


@statistic("head_minus_tail", design=_design)
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
        "p_value": fisher_exact_p(head["k"], head["n"], tail["k"], tail["n"]),
        "test": f"two-sided Fisher exact test of head vs {low_bin}" + ("" if low_bin == "tail" else " (no tail bin in the data)"),
    }
