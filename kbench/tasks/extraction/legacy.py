"""Extraction's v1 results (`schemas/results.extraction.v1.json`) as the v2 envelope the report
reads (`kbench.report.legacy`)."""

from __future__ import annotations

from kbench.report.legacy import envelope, fraction, point


def _extraction_summary(s: dict) -> dict:
    n = s["n"]
    out = {k: fraction(s[k], n) for k in ("maple_accuracy", "exact_accuracy", "rank1_accuracy")}
    if "lama_p_at_1" in s:
        out["lama_p_at_1"] = point(s["lama_p_at_1"], n)
    out["mean_gold_logprob"] = point(s["mean_gold_logprob"], n)
    return out


def from_v1(results: dict) -> dict:
    return envelope(
        results,
        "extraction",
        _extraction_summary(results["overall"]),
        {
            "per_relation": {r: _extraction_summary(s) for r, s in results["per_relation"].items()},
            "per_frequency_bin": {b: _extraction_summary(s) for b, s in results["per_frequency_bin"].items()},
            "protocol_drops": results.get("protocol_drops", {}),
            "known_facts": results.get("known_facts"),
        },
    )
