"""How the KEE evaluation's settings reach each technique, and what the results record of it.

The evaluation's settings carry a few shared options (RECITE's runs, the sampling scheme
top_k / top_p of the temperature baselines and the partition, the seed-B samples the temperature
baselines keep for SGR / DGR) and per-technique overrides
(`technique_params`, e.g. {"iti": {"heads": 13}}). `resolve` turns them into each technique's
validated parameters and checks them against the model before anything runs; `fit_records`
collects what a technique chose at run time (layers, heads, pools) from its rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kbench.errors import UserError
from kbench.tasks.kee.techniques import get_technique


def technique_overrides(
    name: str,
    recite_runs: int,
    top_k: int | None,
    top_p: float,
    technique_params: Mapping[str, Mapping[str, Any]],
    recovery_samples: int = 0,
) -> dict[str, Any]:
    """The parameters `name` gets from the evaluation's settings (its own overrides win)."""
    params: dict[str, Any] = {"runs": recite_runs} if name == "recite" else {}
    if "recovery_samples" in technique_params.get(name, {}):
        # SGR / DGR read K samples at every K of the sweep: fewer would fail, more would be unused
        raise UserError(f"{name}.recovery_samples follows --sweep-max and --sgr-recovery; it cannot be set on its own")
    if get_technique(name).family == "sampling":
        params.update(top_k=top_k, top_p=top_p, recovery_samples=recovery_samples)
    return {**params, **technique_params.get(name, {})}


def resolve(
    techniques: Sequence[str],
    recite_runs: int,
    top_k: int | None,
    top_p: float,
    technique_params: Mapping[str, Mapping[str, Any]],
    model=None,
    recovery_samples: int = 0,
) -> dict[str, dict]:
    """{technique: every validated parameter}. A UserError for a bad sampling scheme, overrides
    of a technique that does not run, invalid values, or settings `model` cannot run (ITI's K
    above its head count), so the run stops before any stage."""
    if (top_k is not None and top_k < 1) or not 0 < top_p <= 1:
        raise UserError(f"sampling scheme: top_k must be >= 1 and 0 < top_p <= 1 (got {top_k}, {top_p})")
    stray = sorted(set(technique_params) - set(techniques))
    if stray:
        raise UserError(f"technique parameters given for {', '.join(stray)}, which --techniques does not run")
    resolved = {}
    for name in techniques:
        overrides = technique_overrides(name, recite_runs, top_k, top_p, technique_params, recovery_samples)
        technique = get_technique(name, **overrides)
        if model is not None:
            technique.check(model)
        resolved[name] = technique.params()
    return resolved


def fit_records(rows: Iterable[dict]) -> list[dict]:
    """The distinct `detail["fit"]` records of a technique's rows, in row order."""
    records: list[dict] = []
    for row in rows:
        fit = json.loads(row["detail"]).get("fit")
        if fit is not None and fit not in records:
            records.append(fit)
    return records
