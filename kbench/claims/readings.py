"""Readings of a rule the paper leaves open, under which a claim's verdict is computed again.

A run may record its own reading of such a rule and, beside it, every other reading's figures
(MAPLE never says when a temperature-sampling method "recovers" a failure: KEE records each
reading's SGR / DGR). The statistic's registry entry knows how to read them (`Statistic.readings`:
{reading: the run under it}); a claim whose statistic reads those figures is tested once per
reading; a statistic that does not read them gives the same result under every reading, and then no
reading is reported.
"""

from __future__ import annotations

from collections.abc import Callable

from kbench.report.runs import Run


def results_by_reading(runs: dict[str, Run], measure: Callable[[Run], dict | None], found: dict) -> dict[str, dict]:
    """{reading: the statistic's result under it} where some reading changes the result; {} when
    the run records no readings (`runs`: {reading: the run under it}) or the statistic does not read them."""
    by_reading = {name: measure(run) for name, run in runs.items()}
    same = lambda r: r is not None and r["estimate"] == found["estimate"] and r["p_value"] == found["p_value"]  # noqa: E731
    if all(same(r) for r in by_reading.values()):
        return {}
    return {name: r for name, r in by_reading.items() if r is not None and r["estimate"].get("value") is not None}
