"""Old result folders still open: one small adapter per task (`from_v1` in the task folder's
`legacy.py`, found there by its name) turns a v1 `results.json` (`schemas/results.<task>.v1.json`) into the v2 envelope the
report reads (docs/results-envelope.md); this module holds what the adapters share.

What a v1 file can and cannot give back:
- a v1 accuracy-like fraction over n items (accuracy, EM, Gain, Loss, a PRS share, SGR/DGR) is k/n
  with k = round(value * n), so its Wilson interval is recomputed exactly;
- a v1 mean (log-probability, F1, LAMA's macro P@1) has no interval: it becomes a point Estimate
  (`"interval": null`), shown without brackets;
- XTEVAL v1 gives mean and std over seeds: a point Estimate carrying `std` and `runs`;
- a v1 file records no protocol block (docs/protocol.md): the converted envelope has no `protocol`
  key, so the report shows "protocol not recorded", never "faithful" (a v1 `protocol` setting such
  as extraction's "maple" names an option, not the procedure the numbers followed).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbench.errors import InputError, UserError
from kbench.evaluate.task import TASKS, folder_module
from kbench.metrics.uncertainty import proportion


def fraction(value: float | None, n: int) -> dict:
    """An Estimate for a v1 fraction of n items; undefined (value None) when v1 had none."""
    if value is None or n == 0:
        return proportion(0, 0)
    return proportion(round(value * n), n)


def point(value: float | None, n: int, **extra: Any) -> dict:
    """A v1 number without an interval (a mean of non-binary scores, a macro mean)."""
    return {"value": value, "n": n, "ci_low": None, "ci_high": None, "interval": None, **extra}


def envelope(results: dict, task: str, headline: dict, metrics: dict, model: dict | None = None) -> dict:
    dataset = results.get("dataset")
    return {
        "schema": "kbench.results.v2",
        "converted_from": results.get("schema"),
        "task": task,
        "model": model or results["model"],
        "dataset": dataset if isinstance(dataset, dict) else {"path": dataset},
        "settings": results.get("settings", {}),
        "timing": results.get("timing", {}),
        "headline": headline,
        "metrics": metrics,
    }


def v1_task(schema: Any) -> str | None:
    """The task a v1 schema name names ("results.kee.v1" -> "kee")."""
    parts = schema.split(".") if isinstance(schema, str) else []
    return parts[1] if len(parts) == 3 and parts[0] == "results" and parts[2] == "v1" else None


def _task(name: str | None):
    try:
        return TASKS.get(name) if name else None
    except UserError:
        return None


def _reader(task: Any) -> Callable[[dict], dict] | None:
    """The task's v1 adapter: `from_v1` of its folder's `legacy.py`, when it has one."""
    legacy = folder_module(task, "legacy") if task is not None else None
    return legacy.from_v1 if legacy is not None else None


def to_v2(results: dict, path: Path) -> dict:
    schema = results.get("schema")
    from_v1 = _reader(_task(v1_task(schema)))
    if from_v1 is None:
        known = sorted(f"results.{name}.v1" for name, cls in TASKS.items().items() if _reader(cls) is not None)
        raise InputError(
            path, f"unknown results schema {schema!r}; expected kbench.results.v2 or one of " + ", ".join(known), key="schema"
        )
    try:
        return from_v1(results)
    except (KeyError, TypeError) as exc:
        raise InputError(path, f"not a valid {schema} file (missing or malformed {exc})") from exc
