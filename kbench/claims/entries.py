"""Claim statistics over several task entries of one model on one dataset (scope "entries"): the
same task run at two or more settings, as a suite runs it with one `[[tasks]]` entry per setting.
The entries are told apart by the settings each run recorded, never by their labels, so a claim
set reads any suite that has them. Same contract as `kbench.claims.statistics`. Both compare the
same items under each setting (the same facts, the same seeded test queries): paired, Newcombe's
interval and the exact McNemar test."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence

from kbench.metrics.uncertainty import difference_paired, mcnemar
from kbench.report.items import read_items
from kbench.report.runs import Run


def _paired(first: dict[str, bool], second: dict[str, bool]) -> tuple[dict, float] | None:
    if not set(first) & set(second):
        return None
    return difference_paired(first, second), mcnemar(first, second)["p_value"]


def _technique_correct(run: Run, technique: str) -> dict[str, bool]:
    return {
        str(r["item_id"]): bool(r["correct"])
        for r in read_items(run.path)
        if r.get("technique") == technique and r.get("correct") is not None
    }


def technique_setting_difference(runs: Sequence[Run], technique: str, param: str, first: int | str, second: int) -> dict | None:
    """KEE accuracy of `technique` in the run whose resolved `param` is `first` − in the run where it
    is `second`, on the items both answered. `first` "largest": the largest value above `second`
    among the runs (MAPLE-28: more heads masked than 20)."""
    by_value: dict = {}
    for run in runs:
        value = ((run.metrics.get("technique_params") or {}).get(technique) or {}).get(param)
        if value is not None and technique in (run.metrics.get("per_technique") or {}):
            by_value.setdefault(value, run)
    if first == "largest":
        first = max((v for v in by_value if v > second), default=None)
    if first not in by_value or second not in by_value:
        return None
    tested = _paired(*(_technique_correct(by_value[v], technique) for v in (first, second)))
    if tested is None:
        return None
    estimate, p_value = tested
    return {
        "estimate": estimate,
        "p_value": p_value,
        "test": f"{technique} accuracy at {param} = {first} − at {second}, exact McNemar",
    }


def _query_correct(run: Run, setting: str) -> dict[str, bool]:
    return {
        str(r["id"]): bool(r["correct"])
        for r in read_items(run.path)
        if r.get("kind") == "query" and r.get("setting") == setting and r.get("correct") is not None
    }


def _finetune_runs(runs: Sequence[Run], param: str, values: Sequence[float]) -> dict[float, Run] | None:
    """value of the fine-tuning setting `param` -> the run at it, among runs whose other fine-tuning
    settings agree (a suite with learning-rate entries and negatives entries has three runs at
    4 negatives: the one at the default learning rate is the one that differs only in negatives).
    The first group of agreeing runs (suite order) with every value decides; None if none has."""
    groups: dict[str, dict[float, Run]] = {}
    for run in runs:
        finetune = (run.results.get("settings") or {}).get("finetune") or {}
        if finetune.get(param) is not None:
            others = json.dumps({k: v for k, v in finetune.items() if k != param}, sort_keys=True)
            groups.setdefault(others, {}).setdefault(float(finetune[param]), run)
    return next((g for g in groups.values() if all(float(v) in g for v in values)), None)


def downstream_across_finetune(runs: Sequence[Run], param: str, values: Sequence[float], setting: str = "iid") -> dict | None:
    """XTEVAL's downstream accuracy at one value of a fine-tuning setting (`lr`, XTEVAL-16;
    `negatives_per_type`, XTEVAL-7) − at another, on the test queries both runs share (one
    D^theta, one split seed: the same queries; the test distractors do not depend on the setting);
    of every pair of `values` the one farthest apart decides (an equivalence holds only if it holds
    there). None unless every value has a run whose other fine-tuning settings agree."""
    by_value = _finetune_runs(runs, param, values)
    if by_value is None:
        return None
    correct = {float(v): _query_correct(by_value[float(v)], setting) for v in values}
    found = []
    for a, b in itertools.combinations(sorted(correct), 2):
        tested = _paired(correct[b], correct[a])
        if tested is not None:
            found.append((b, a, *tested))
    if not found:
        return None
    high, low, estimate, p_value = max(found, key=lambda f: abs(f[2]["value"]))
    return {
        "estimate": estimate,
        "p_value": p_value,
        "test": f"downstream accuracy ({setting}): {param} {high:g} − {param} {low:g}, the farthest of {len(found)} pairs, "
        "exact McNemar",
    }
