"""XTEVAL's headline downstream figures with item-level intervals, and IID - OOD.

Per setting: downstream accuracy, usable knowledge and Gap 2, each the mean over runs of the run's
figure (as the paper averages its 27 runs), with a two-level bootstrap interval
(`kbench.metrics.clustered.gap_replicates`: runs, then the queries and D's facts within each run),
so one run (`--seeds 1`) still has the spread of its test queries. `n` is the number of distinct
test facts over the setting's runs; `runs` and `queries` say what was resampled.

When both settings ran, `iid_minus_ood_*` is the difference of the two headline numbers, its
interval from the same replicates (paired on runs: the same run keys and D^theta draws; the test
queries are different facts, unpaired). `metrics.iid_minus_ood.on_shared_facts` adds the paired
comparison on the facts that are in both an IID and an OOD test split (sign test / exact McNemar).
"""

from __future__ import annotations

from collections import defaultdict

from kbench.errors import UserError
from kbench.metrics.clustered import bootstrap_estimate, gap_replicates, headline_values, paired_shares, run_counts

FIGURES = ("downstream_accuracy", "usable_knowledge", "gap2")
DIFFERENCES = ("downstream_accuracy", "usable_knowledge")
PAIRING = (
    "difference of the headline means; two-level bootstrap paired on runs (the same extraction x split x "
    "fine-tune keys and D^theta draws), the IID and OOD test queries resampled independently (different facts)"
)


def _fact_shares(queries: list[dict]) -> dict[str, float]:
    """fact id -> the share of its queries (over the runs) answered correctly."""
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for q in queries:
        outcomes[str(q["fact_id"])].append(bool(q["correct"]))
    return {fact: sum(v) / len(v) for fact, v in outcomes.items()}


def _covers(runs: int) -> str:
    """What the interval's spread holds (the Estimate's `covers`)."""
    if runs == 1:
        return "one run: its test queries and D's probed facts only, the seed-to-seed spread is not inside"
    return "runs (extraction x split x fine-tune seeds) and, within each, its test queries and D's probed facts"


def downstream_headline(rows: list[dict], known: dict[int, tuple[int, int]], settings: list[str], seed: int) -> tuple[dict, dict]:
    """(headline Estimates, metrics block `iid_minus_ood` or {}) from the task's rows.
    `known`: extraction seed -> (known facts, probed facts)."""
    queries = {s: [r for r in rows if r["kind"] == "query" and r["setting"] == s] for s in settings}
    if any("fact_id" not in q for qs in queries.values() for q in qs):
        raise UserError("the run's journal was written by an older kbench (query rows without fact_id): rerun into a new --out")
    counts = {setting: run_counts(qs) for setting, qs in queries.items()}
    replicates = gap_replicates(counts, known, seed=seed)
    values: dict[str, dict[str, float]] = {}
    headline = {}
    for setting, runs in counts.items():
        values[setting] = headline_values(runs, known)
        extra = {"runs": len(runs), "queries": sum(r.queries for r in runs), "covers": _covers(len(runs))}
        n_facts = len({q["fact_id"] for q in queries[setting]})
        for figure in FIGURES:
            headline[f"{setting}_{figure}"] = bootstrap_estimate(
                values[setting][figure], replicates[setting][figure], n_facts, seed, **extra
            )
    if set(settings) != {"iid", "ood"}:
        return headline, {}
    n_facts = len({q["fact_id"] for s in settings for q in queries[s]})
    difference = {}
    for figure in DIFFERENCES:
        diffs = [a - b for a, b in zip(replicates["iid"][figure], replicates["ood"][figure])]
        value = values["iid"][figure] - values["ood"][figure]
        difference[figure] = headline[f"iid_minus_ood_{figure}"] = bootstrap_estimate(value, diffs, n_facts, seed)
    on_facts = paired_shares(_fact_shares(queries["iid"]), _fact_shares(queries["ood"]), seed=seed)
    return headline, {"iid_minus_ood": {**difference, "pairing": PAIRING, "on_shared_facts": on_facts}}
