"""Models compared on the items they share, paired (docs/definitions.md, "Intervals and
tests").

Runs of the same task are compared only on the item ids every one of them has; the comparison
says how many items are shared and how many each run leaves out. Each run's accuracy on the shared
items carries its Wilson interval, and every pair of runs gets the exact McNemar test on per-item
correctness (`kbench.metrics.uncertainty.mcnemar`). KEE runs are compared technique by technique
(a row's `technique`; the sampling partitions, which have no correctness, are left out). Runs of
one task that share no item are refused: they are not comparable, and side by side they would
look as if they were. A task whose runs do not pair item by item compares them itself
(`Task.compare_runs`: XTEVAL pairs facts, part by part). Runs whose settings differ (a protocol, a prompt form, stop strings) are
compared, with a note naming each differing setting: the test then compares settings as well as
models. Runs whose protocol blocks differ (docs/protocol.md) get the differences that make the
comparison not like for like (`kbench.protocol.comparison_differences`), each with what every run
did and which numbers it touches; a `--limit` sample is not among them (shared items handle it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import combinations

from kbench.errors import UserError
from kbench.evaluate.departures import SAMPLE_LIMIT
from kbench.metrics.uncertainty import format_estimate, mcnemar, proportion_of
from kbench.protocol import comparison_differences, describe
from kbench.report.items import item_correct
from kbench.report.runs import Run, task_class


@dataclass
class Comparison:
    task: str
    labels: list[str]
    items: dict[str, int]  # run label -> items it has (with a correctness)
    n_shared: int
    # group (a `technique` row's, "" for none; a task's own comparison: its part) -> accuracy, pairs;
    # a part may add its own n_shared, items (per run), paired and, when unpaired, the reason
    groups: dict[str, dict] = field(default_factory=dict)
    protocols: dict[str, str] = field(default_factory=dict)  # run label -> its protocol in one line
    # why the runs' protocols make the comparison not like for like ([] when they agree)
    protocol_differences: list[str] = field(default_factory=list)
    # how the page and comparison.md name what is shared and grouped (a task's own comparison sets them)
    unit: str = "item"  # what n_shared counts, singular
    unit_note: str = ""  # where those are counted, when the groups count otherwise ("extraction")
    group_kind: str = "technique"  # what a group is ("" when its name says it)
    outcome_unit: str = "items"  # what a group's accuracy is over

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


def _refuse(task: str, labels: list[str], sizes: list[int], what: str = "item") -> None:
    described = ", ".join(f"{label}: {n} {what}s" for label, n in zip(labels, sizes))
    raise UserError(
        f"the {task} runs {', '.join(labels)} share no {what} (by id; {described}): they were evaluated "
        f"on different {what}s and cannot be compared; report them separately"
    )


def _task_comparison(task: str, runs: list[Run], items: list[list[dict]]) -> tuple[Comparison, list[str]] | None:
    """The task's own comparison of its runs (`Task.compare_runs`), refused when they share nothing."""
    cls = task_class(task)
    own = cls().compare_runs(runs, items) if cls is not None else None
    if own is not None and not own[0].n_shared:
        _refuse(task, own[0].labels, list(own[0].items.values()), own[0].unit)
    return own


def _compare(task: str, runs: list[Run], outcomes: list[dict[str, dict[str, bool]]]) -> Comparison:
    ids = [set().union(*per.values()) if per else set() for per in outcomes]
    shared = set.intersection(*ids)
    labels = [r.label for r in runs]
    if not shared:
        _refuse(task, labels, [len(i) for i in ids])
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
        differences = protocol_differences([runs[i] for i in members])
        missing = [runs[i].label for i in members if not items[i]]
        if missing:
            notes.append(f"{task}: no paired comparison, {', '.join(missing)} has no per-item table (items.parquet)")
            notes += [f"{task}: not like for like: {line}" for line in differences]
            continue
        own = _task_comparison(task, [runs[i] for i in members], [items[i] for i in members])
        if own is not None:
            comparisons.append(own[0])
            notes += own[1]
        else:
            outcomes = [correctness(items[i], runs[i].outcome_columns) for i in members]
            comparisons.append(_compare(task, [runs[i] for i in members], outcomes))
        comparisons[-1].protocols = {runs[i].label: describe(runs[i].protocol) for i in members}
        comparisons[-1].protocol_differences = differences
        differing = differing_settings([runs[i] for i in members])
        if differing:
            described = "; ".join(f"{key} ({_by_run(values)})" for key, values in differing.items())
            notes.append(
                f"{task}: the runs differ in settings besides the model, so the paired test compares these too: {described}"
            )
    return comparisons, notes


def protocol_differences(runs: list[Run]) -> list[str]:
    """What in the runs' protocol blocks makes their comparison invalid as like for like."""
    return comparison_differences({run.label: run.protocol for run in runs}, same_items=(SAMPLE_LIMIT,))


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


PAIR_HEADER = ["first", "second", "b", "c", "p (exact McNemar)"]


def pair_cells(pairs: list[dict]) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a part's pairwise tests: paired (b, c, exact p, and the paired difference
    when there is one) or unpaired (the difference with its interval, b, c and p empty)."""
    with_difference = any("difference" in p for p in pairs)
    header = PAIR_HEADER + (["difference first - second [95% CI]", "test"] if with_difference else [])
    rows = []
    for p in pairs:
        tested = p.get("paired", True)
        cells = [p["first"], p["second"], *((str(p["b"]), str(p["c"]), format_p(p["p_value"])) if tested else ("—",) * 3)]
        if with_difference:
            cells += [format_estimate(p.get("difference")), "paired on facts" if tested else "unpaired (Newcombe)"]
        rows.append(cells)
    return header, rows


def part_counts(c: Comparison, result: dict) -> str:
    """'Shared facts: N. Left out: ...' of a part that counts its own shared items ("" for other groups)."""
    if "n_shared" not in result:
        return ""
    if not result.get("paired", True):
        own = ", ".join(f"{label} {n}" for label, n in result["items"].items())
        return f"Not paired: {result['reason']}; each run's own test facts ({own}) compared unpaired."
    left = ", ".join(f"{label} {n - result['n_shared']} of {n}" for label, n in result["items"].items())
    return f"Shared facts: {result['n_shared']}. Left out: {left}."


def markdown(comparisons: list[Comparison], notes: list[str]) -> str:
    lines = [
        "# Model comparison on shared items",
        "",
        "Accuracy on the items every run of a task has (by item id; XTEVAL: by fact, part by part), with 95% "
        "intervals (Wilson for 0/1 outcomes); `*` marks n < 30. b = items only the first model gets right "
        "(or does better on), c = only the second; p = exact McNemar (two-sided binomial of min(b, c) in b + c at 0.5).",
        "",
    ]
    for c in comparisons:
        left = ", ".join(f"{label} {c.left_out(label)} of {c.items[label]}" for label in c.labels)
        what = f"{c.unit}s ({c.unit_note})" if c.unit_note else f"{c.unit}s"
        lines += [f"## {c.task}: {len(c.labels)} runs", "", f"Shared {what}: {c.n_shared}. Left out: {left}.", ""]
        lines += [f"Protocols: {'; '.join(f'{label}: {text}' for label, text in c.protocols.items())}.", ""]
        if c.protocol_differences:
            lines += ["**Not like for like** (protocol blocks differ):", ""]
            lines += [f"- {line}" for line in c.protocol_differences] + [""]
        for group, result in c.groups.items():
            if group:
                lines += [f"### {c.group_kind}: {group}" if c.group_kind else f"### {group}", ""]
            counts = part_counts(c, result)
            lines += [counts, ""] if counts else []
            paired = result.get("paired", True)
            column = f"accuracy on shared {c.outcome_unit}" if paired else f"accuracy on its own test {c.outcome_unit}"
            lines += [f"| model | {column} [95% CI] | n |", "|---|---|---:|"]
            lines += [f"| {label} | {format_estimate(e)} | {e['n']} |" for label, e in result["accuracy"].items()]
            header, rows = pair_cells(result["pairs"])
            lines += ["", "| " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(header) - 2)]
            lines += ["| " + " | ".join(row) + " |" for row in rows]
            lines.append("")
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines).rstrip() + "\n"
