"""XTEVAL runs compared on facts, never on per-run query numbers (`kbench report`).

An XTEVAL run has three kinds of rows: extraction rows (one per fact and extraction seed), query
rows (one per test fact and run) and run rows. A query's id (`iid/e0-s0-f0/q3`) numbers the run's
test split, which is drawn from the model's own D^theta: `q3` is a different fact in each model's
run. So the parts are compared separately, each on fact identity (`fact_id`):

- extraction (D^theta): the facts both models were probed on (known or unknown; unreadable and
  untrained facts are not probed). A fact's outcome is the share of the run's extraction seeds
  that know it (0/1 with one seed); paired, exact McNemar (`kbench.metrics.clustered.paired_shares`).
- downstream, per setting: the facts in every model's test split under the same split seed, when
  the runs have the same split seeds. A fact's outcome is the share of its queries (over the runs
  with those split seeds) answered correctly; paired as above. When the split seeds differ, or no
  fact is in every test split, each run's test facts are compared unpaired: the difference of the
  two accuracies over facts with Newcombe's interval, labelled unpaired.

Each part says how many facts were shared and how many each run leaves out. Runs whose D^theta
criteria differ (first-token, full-answer, a masked LM's single token) get a note suggesting
`--top1 full-answer` as the common ground.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations

from kbench.metrics.clustered import paired_shares, share_estimate
from kbench.metrics.uncertainty import difference_unpaired
from kbench.report.compare import Comparison
from kbench.report.runs import Run
from kbench.tasks.xteval.criterion import run_criterion

EXTRACTION = "extraction (D^theta)"
UNPAIRED = "unpaired difference of proportions over each run's test facts (Newcombe hybrid score)"


def _extraction_shares(rows: list[dict]) -> dict[str, float]:
    """fact id -> the share of extraction seeds that know it, over the facts that were probed."""
    seeds: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        if r.get("kind") == "extraction" and r.get("status") in ("known", "unknown"):
            seeds[str(r["fact_id"])].append(r["status"] == "known")
    return {fact: sum(v) / len(v) for fact, v in seeds.items()}


def _test_outcomes(rows: list[dict], setting: str) -> dict[str, dict[int, list[bool]]]:
    """fact id -> split seed -> the outcomes of its queries (over extraction and fine-tune seeds)."""
    out: dict[str, dict[int, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("kind") == "query" and r.get("setting") == setting:
            out[str(r["fact_id"])][int(r["split_seed"])].append(bool(r["correct"]))
    return out


def _share(outcomes: dict[int, list[bool]], seeds) -> float:
    values = [v for s in seeds for v in outcomes[s]]
    return sum(values) / len(values)


def _paired_part(labels: list[str], shares: list[dict[str, float]], seed: int) -> dict:
    shared = sorted(set.intersection(*(set(s) for s in shares)))
    restricted = [{f: s[f] for f in shared} for s in shares]
    return {
        "paired": True,
        "n_shared": len(shared),
        "items": {label: len(s) for label, s in zip(labels, shares)},
        "accuracy": {label: share_estimate(list(r.values()), seed) for label, r in zip(labels, restricted)},
        "pairs": [
            {"first": labels[a], "second": labels[b], **paired_shares(restricted[a], restricted[b], seed=seed)}
            for a, b in combinations(range(len(labels)), 2)
        ],
    }


def _unpaired_part(labels: list[str], shares: list[dict[str, float]], reason: str, seed: int) -> dict:
    sums = [(sum(s.values()), len(s)) for s in shares]
    return {
        "paired": False,
        "reason": reason,
        "n_shared": 0,
        "items": {label: len(s) for label, s in zip(labels, shares)},
        "accuracy": {label: share_estimate(list(s.values()), seed) for label, s in zip(labels, shares)},
        "pairs": [
            {"first": labels[a], "second": labels[b], "paired": False, "test": UNPAIRED,
             "difference": difference_unpaired(*sums[a], *sums[b])}  # k: sums of per-fact shares
            for a, b in combinations(range(len(labels)), 2)
        ],
    }  # fmt: skip


def _downstream(labels: list[str], items: list[list[dict]], setting: str, seed: int) -> dict:
    outcomes = [_test_outcomes(rows, setting) for rows in items]
    split_seeds = [sorted({s for per in o.values() for s in per}) for o in outcomes]
    own = [{f: _share(per, per) for f, per in o.items()} for o in outcomes]
    if any(s != split_seeds[0] for s in split_seeds):
        seeds = ", ".join(f"{label}: {s}" for label, s in zip(labels, split_seeds))
        return _unpaired_part(labels, own, f"the runs' split seeds differ ({seeds})", seed)
    matched = {}  # fact -> the split seeds under which it is in every run's test split
    for fact in set.intersection(*(set(o) for o in outcomes)):
        common = sorted(set.intersection(*(set(o[fact]) for o in outcomes)))
        if common:
            matched[fact] = common
    if not matched:
        return _unpaired_part(labels, own, "no fact is in every run's test split under the same split seed", seed)
    part = _paired_part(labels, [{f: _share(o[f], s) for f, s in matched.items()} for o in outcomes], seed)
    part["items"] = {label: len(o) for label, o in zip(labels, outcomes)}
    return part


def compare_xteval(runs: list[Run], items: list[list[dict]], seed: int = 0) -> tuple[dict[str, dict], list[str]]:
    """({part: result}, notes): the extraction part and one downstream part per setting all runs ran."""
    labels = [r.label for r in runs]
    notes = []
    parts = {EXTRACTION: _paired_part(labels, [_extraction_shares(rows) for rows in items], seed)}
    settings = [s for s in ("iid", "ood") if all(any(r.get("setting") == s for r in rows) for rows in items)]
    lacking = [label for label, rows in zip(labels, items) if any(r.get("kind") == "query" and "fact_id" not in r for r in rows)]
    if lacking:
        notes.append(
            f"xteval: downstream not compared: the query rows of {', '.join(lacking)} name no fact (fact_id; "
            "written by an older kbench), and query numbers differ in meaning between runs"
        )
    else:
        parts.update({f"downstream {s}": _downstream(labels, items, s, seed) for s in settings})
    criteria = {label: run_criterion(run.results)["criterion"] for label, run in zip(labels, runs)}
    if len(set(criteria.values())) > 1:
        described = ", ".join(f"{label}: {c}" for label, c in criteria.items())
        notes.append(
            f"xteval: the runs count a fact as known (D^theta) by different criteria ({described}), so acc_D and "
            "the facts behind the downstream test differ in kind as well as in model; rerun with "
            "`--top1 full-answer` for common ground"
        )
    return parts, notes


def comparison(runs: list[Run], items: list[list[dict]]) -> tuple[Comparison, list[str]]:
    """The report's comparison of XTEVAL runs (`Task.compare_runs`): shared = the extraction part's facts."""
    parts, notes = compare_xteval(runs, items)
    extraction = parts[EXTRACTION]
    labels = [r.label for r in runs]
    shared = Comparison("xteval", labels, extraction["items"], extraction["n_shared"], parts)
    shared.unit, shared.unit_note, shared.group_kind, shared.outcome_unit = "probed fact", "extraction", "", "facts"
    return shared, notes
