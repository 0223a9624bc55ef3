"""LEFT's v1 results (`schemas/results.truefalse.v1.json`) as the v2 envelope the report reads
(`kbench.report.legacy`)."""

from __future__ import annotations

from typing import Any

from kbench.report.legacy import envelope, fraction


def _tf_summary(s: dict) -> dict:
    return {"accuracy": fraction(s["accuracy"], s["n"]), "uncalibrated_accuracy": fraction(s["uncalibrated_accuracy"], s["n"])}


def from_v1(results: dict) -> dict:
    overall = _tf_summary(results["overall"])
    metrics: dict[str, Any] = {"per_book": {b: _tf_summary(s) for b, s in results["per_book"].items()}}
    if "before_after" in results:
        n = results["overall"]["n"]
        ba = results["before_after"]
        metrics["before_after"] = {
            "before_accuracy": fraction(ba["before_accuracy"], n),
            "after_accuracy": fraction(ba["after_accuracy"], n),
            "delta": ba["delta"],
        }
    return envelope(results, "truefalse", overall, metrics)
