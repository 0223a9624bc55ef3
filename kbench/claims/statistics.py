"""Per-cell statistics of the claims: each returns an Estimate of a difference (95% interval, n)
and the p-value of its test, or None when the cell lacks the data (a dataset without bins).

    head_minus_tail(run)            accuracy(head) − accuracy(tail), unpaired: Newcombe, Fisher exact p
    outdated_minus_updated_em(run)  EM(outdated answer) − EM(updated answer) on the same edited
                                    questions, paired: Newcombe's paired interval, exact McNemar p
"""

from __future__ import annotations

from kbench.metrics.uncertainty import difference_paired, difference_unpaired, mcnemar
from kbench.report.runs import Run


def head_minus_tail(run: Run) -> dict | None:
    bins = run.metrics.get("per_frequency_bin") or {}
    head, tail = bins.get("head", {}).get(run.primary), bins.get("tail", {}).get(run.primary)
    if not head or not tail or "k" not in head or "k" not in tail or not head["n"] or not tail["n"]:
        return None
    from scipy.stats import fisher_exact

    table = [[head["k"], head["n"] - head["k"]], [tail["k"], tail["n"] - tail["k"]]]
    p_value = float(fisher_exact(table, alternative="two-sided").pvalue)
    return {
        "estimate": difference_unpaired(head["k"], head["n"], tail["k"], tail["n"]),
        "p_value": p_value,
        "metric": run.primary,
        "test": "two-sided Fisher exact test of head vs tail",
    }


def outdated_minus_updated_em(run: Run) -> dict | None:
    from kbench.report.items import read_items

    edited = [r for r in read_items(run.path) if r.get("category") == "edited" and r.get("em_outdated") is not None]
    if not edited:
        return None
    outdated = {str(r["id"]): bool(r["em_outdated"]) for r in edited}
    updated = {str(r["id"]): bool(r["em_updated"]) for r in edited}
    return {
        "estimate": difference_paired(outdated, updated),
        "p_value": mcnemar(outdated, updated)["p_value"],
        "metric": "em",
        "test": "exact McNemar of outdated vs updated EM",
    }


STATISTICS = {"head_minus_tail": head_minus_tail, "outdated_minus_updated_em": outdated_minus_updated_em}
