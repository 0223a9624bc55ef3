"""KEE's v1 results (`schemas/results.kee.v1.json`) as the v2 envelope the report reads
(`kbench.report.legacy`): Gain counts over the baseline's failures, Loss over its successes; a
temperature-sampling technique's PRS (100 % Tied in v1) is undefined, with the reason."""

from __future__ import annotations

from kbench.report.legacy import envelope, fraction
from kbench.tasks.kee.metrics import SAMPLING_PRS_UNDEFINED, prs_undefined
from kbench.tasks.kee.techniques import is_sampling


def _kee_technique(name: str, m: dict, base_accuracy: float | None) -> dict:
    n = m["n"]
    base_right = round((base_accuracy or 0.0) * n)
    out = {
        "accuracy": fraction(m["accuracy"], n),
        "exact_accuracy": fraction(m["exact_accuracy"], n),
        "gain": fraction(m["gain"], n - base_right),  # over the baseline's failures
        "loss": fraction(m["loss"], base_right),  # over the baseline's successes
        "prs": prs_undefined(SAMPLING_PRS_UNDEFINED)
        if is_sampling(name)
        else {part: fraction(m["prs"][part], m["prs"]["n"]) for part in ("improved", "tied", "worsened")},
    }
    for temp, rates in m["beyond_sampling"].items():
        out[f"SGR τ={temp}"] = fraction(rates["sgr"], rates["shallow"])
        out[f"DGR τ={temp}"] = fraction(rates["dgr"], rates["deep"])
    return out


def _kee_slice(slice_: dict, techniques: list[str]) -> dict:
    base = slice_["baseline"]["accuracy"]
    return {t: _kee_technique(t, slice_[t], base) for t in techniques if t in slice_}


def from_v1(results: dict) -> dict:
    techniques = results["techniques"]
    per_technique = _kee_slice(results["overall"], techniques)
    return envelope(
        results,
        "kee",
        {"accuracy": per_technique["baseline"]["accuracy"]},
        {
            "techniques": techniques,
            "per_technique": per_technique,
            "per_frequency_bin": {b: _kee_slice(s, techniques) for b, s in results["per_frequency_bin"].items()},
        },
    )
