"""Models compared on the items they share, paired (docs/definitions.md, "Intervals and
tests").

Runs of the same task are compared only on the item ids every one of them has; the comparison
says how many items are shared and how many each run leaves out. Each run's accuracy on the shared
items carries its Wilson interval, and every pair of runs gets the exact McNemar test on per-item
correctness (`kbench.metrics.uncertainty.mcnemar`). KEE runs are compared technique by technique
(a row's `technique`; the sampling partitions, which have no correctness, are left out). Runs of
one task that share no item are refused: they are not comparable, and side by side they would
look as if they were. Runs whose settings differ (a protocol, a prompt form, stop strings) are
compared, with a note naming each differing setting: the test then compares settings as well as
models.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import combinations

from kbench.errors import UserError
from kbench.metrics.uncertainty import format_estimate, mcnemar, proportion_of
from kbench.report.items import item_correct
from kbench.report.runs import Run


@dataclass
class Comparison:
    task: str
    labels: list[str]
    items: dict[str, int]  # run label -> items it has (with a correctness)
    n_shared: int
    groups: dict[str, dict] = field(default_factory=dict)  # technique ("" for other tasks) -> accuracy, pairs

    def left_out(self, label: str) -> int:
        return self.items[label] - self.n_shared


def correctness(rows: list[dict], columns: tuple[str, ...] = ("correct",)) -> dict[str, dict[str, bool]]:
    """group (technique, or "") -> item id -> correct (the first non-null of `columns`)."""
    out: dict[str, dict[str, bool]] = {}
    for row in rows:
        ok, key = item_correct(row, columns), row.get("item_id") or row.get("id")
        if ok is not None and key is not None:
            out.setdefault(str(row.get("technique") or ""), {})[str(key)] = ok
    return out


def _compare(task: str, runs: list[Run], outcomes: list[dict[str, dict[str, bool]]]) -> Comparison:
    ids = [set().union(*per.values()) if per else set() for per in outcomes]
    shared = set.intersection(*ids)
    labels = [r.label for r in runs]
    if not shared:
        sizes = ", ".join(f"{label}: {len(i)} items" for label, i in zip(labels, ids))
        raise UserError(
            f"the {task} runs {', '.join(labels)} share no item (by id; {sizes}): they were evaluated "
            "on different items and cannot be compared; report them separately"
        )
    comparison = Comparison(task, labels, {label: len(i) for label, i in zip(labels, ids)}, len(shared))
    for group in sorted(set.intersection(*(set(per) for per in outcomes)), key=lambda g: (g != "baseline", g)):
        restricted = [{i: per[group][i] for i in sorted(shared) if i in per[group]} for per in outcomes]
        comparison.groups[group] = {
            "accuracy": {label: proportion_of(list(r.values())) for label, r in zip(labels, restricted)},
            "pairs": [
                {"first": labels[a], "second": labels[b], **mcnemar(restricted[a], restricted[b])}
                for a, b in combinations(range(len(runs)), 2)
            ],
        }
    return comparison


def compare_runs(runs: list[Run], items: list[list[dict]]) -> tuple[list[Comparison], list[str]]:
    """Paired comparisons of every task with two or more runs; notes for runs that cannot be paired."""
    by_task: dict[str, list[int]] = {}
    for i, run in enumerate(runs):
        by_task.setdefault(run.task, []).append(i)
    comparisons, notes = [], []
    for task, members in by_task.items():
        if len(members) < 2:
            continue
        missing = [runs[i].label for i in members if not items[i]]
        if missing:
            notes.append(f"{task}: no paired comparison, {', '.join(missing)} has no per-item table (items.parquet)")
            continue
        comparisons.append(
            _compare(task, [runs[i] for i in members], [correctness(items[i], runs[i].outcome_columns) for i in members])
        )
        differing = differing_settings([runs[i] for i in members])
        if differing:
            described = "; ".join(f"{key} ({_by_run(values)})" for key, values in differing.items())
            notes.append(
                f"{task}: the runs differ in settings besides the model, so the paired test compares these too: {described}"
            )
    return comparisons, notes


# Settings that change which items a run has, not how an item is scored: shared items handle them.
ITEM_SET_SETTINGS = {"limit"}


def differing_settings(runs: list[Run]) -> dict[str, dict[str, object]]:
    """{setting: {run label: value}} for each setting (other than the item set's) whose value is not
    the same in every run, e.g. a MAPLE run beside a strict-LAMA run of one model."""
    keys = sorted({key for run in runs for key in run.results.get("settings", {})} - ITEM_SET_SETTINGS)
    differing = {}
    for key in keys:
        values = {run.label: run.results.get("settings", {}).get(key) for run in runs}
        if len({json.dumps(v, sort_keys=True) for v in values.values()}) > 1:
            differing[key] = values
    return differing


def _by_run(values: dict[str, object]) -> str:
    return ", ".join(f"{label}: {value}" for label, value in values.items())


def format_p(value: float) -> str:
    return f"{value:.3g}" if value >= 0.001 else f"{value:.1e}"


def markdown(comparisons: list[Comparison], notes: list[str]) -> str:
    lines = [
        "# Model comparison on shared items",
        "",
        "Accuracy on the items every run of a task has (by item id), with 95% Wilson intervals; "
        "`*` marks n < 30. b = items only the first model gets right, c = only the second; "
        "p = exact McNemar (two-sided binomial of min(b, c) in b + c at 0.5).",
        "",
    ]
    for c in comparisons:
        left = ", ".join(f"{label} {c.left_out(label)} of {c.items[label]}" for label in c.labels)
        lines += [f"## {c.task}: {len(c.labels)} runs", "", f"Shared items: {c.n_shared}. Left out: {left}.", ""]
        for group, result in c.groups.items():
            if group:
                lines += [f"### technique: {group}", ""]
            lines += ["| model | accuracy on shared items [95% CI] | n |", "|---|---|---:|"]
            lines += [f"| {label} | {format_estimate(e)} | {e['n']} |" for label, e in result["accuracy"].items()]
            lines += ["", "| first | second | b | c | p (exact McNemar) |", "|---|---|---:|---:|---:|"]
            lines += [
                f"| {p['first']} | {p['second']} | {p['b']} | {p['c']} | {format_p(p['p_value'])} |" for p in result["pairs"]
            ]
            lines.append("")
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines).rstrip() + "\n"
