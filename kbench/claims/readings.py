"""Readings of a rule the paper leaves open, under which a claim's verdict is computed again.

MAPLE never says when a temperature-sampling method "recovers" a failure for SGR / DGR: any of its
K seed-B samples correct, a majority of them, or one sample. A KEE run records its own reading as
`beyond_sampling[partition]["sgr" / "dgr"]` and, beside it, every reading's rates under
`beyond_sampling[partition]["readings"][name]`. A claim whose statistic reads those rates is
tested once per reading on a view of the run whose rates are that reading's; a statistic that
does not read them gives the same result under every reading, and then no reading is reported.
"""

from __future__ import annotations

import copy
import dataclasses

from kbench.report.runs import Run


def reading_names(run: Run) -> list[str]:
    """The readings the run's techniques record, in the order first met."""
    names: dict[str, None] = {}
    for block in (run.metrics.get("per_technique") or {}).values():
        for partition in (block.get("beyond_sampling") or {}).values():
            names.update(dict.fromkeys((partition or {}).get("readings") or {}))
    return list(names)


def under_reading(run: Run, reading: str) -> Run:
    """The run with each technique's SGR / DGR replaced by their values under `reading` (a technique
    without that reading keeps its own: a KEE technique recovers by its one greedy answer)."""
    metrics = copy.deepcopy(run.metrics)
    for block in (metrics.get("per_technique") or {}).values():
        for partition in (block.get("beyond_sampling") or {}).values():
            partition.update(((partition or {}).get("readings") or {}).get(reading) or {})
    return dataclasses.replace(run, results={**run.results, "metrics": metrics})


def results_by_reading(run: Run, measure, found: dict) -> dict[str, dict]:
    """{reading: the statistic's result under it} where some reading changes the result; {} when
    the run records no readings or the statistic does not read them."""
    by_reading = {name: measure(under_reading(run, name)) for name in reading_names(run)}
    same = lambda r: r is not None and r["estimate"] == found["estimate"] and r["p_value"] == found["p_value"]  # noqa: E731
    if all(same(r) for r in by_reading.values()):
        return {}
    return {name: r for name, r in by_reading.items() if r is not None and r["estimate"].get("value") is not None}
