"""Old result folders still open: one small adapter per task turns a v1 `results.json`
(`schemas/results.<task>.v1.json`) into the v2 envelope the report reads (docs/results-envelope.md).

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

from pathlib import Path
from typing import Any

from kbench.errors import InputError
from kbench.metrics.uncertainty import proportion


def fraction(value: float | None, n: int) -> dict:
    """An Estimate for a v1 fraction of n items; undefined (value None) when v1 had none."""
    if value is None or n == 0:
        return proportion(0, 0)
    return proportion(round(value * n), n)


def point(value: float | None, n: int, **extra: Any) -> dict:
    """A v1 number without an interval (a mean of non-binary scores, a macro mean)."""
    return {"value": value, "n": n, "ci_low": None, "ci_high": None, "interval": None, **extra}


def _envelope(results: dict, task: str, headline: dict, metrics: dict, model: dict | None = None) -> dict:
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


# --- extraction ---------------------------------------------------------------------------------
def _extraction_summary(s: dict) -> dict:
    n = s["n"]
    out = {k: fraction(s[k], n) for k in ("maple_accuracy", "exact_accuracy", "rank1_accuracy")}
    if "lama_p_at_1" in s:
        out["lama_p_at_1"] = point(s["lama_p_at_1"], n)
    out["mean_gold_logprob"] = point(s["mean_gold_logprob"], n)
    return out


def extraction(results: dict) -> dict:
    return _envelope(
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


# --- kee ----------------------------------------------------------------------------------------
def _kee_technique(m: dict, base_accuracy: float | None) -> dict:
    n = m["n"]
    base_right = round((base_accuracy or 0.0) * n)
    out = {
        "accuracy": fraction(m["accuracy"], n),
        "exact_accuracy": fraction(m["exact_accuracy"], n),
        "gain": fraction(m["gain"], n - base_right),  # over the baseline's failures
        "loss": fraction(m["loss"], base_right),  # over the baseline's successes
        "prs": {part: fraction(m["prs"][part], m["prs"]["n"]) for part in ("improved", "tied", "worsened")},
    }
    for temp, rates in m["beyond_sampling"].items():
        out[f"SGR τ={temp}"] = fraction(rates["sgr"], rates["shallow"])
        out[f"DGR τ={temp}"] = fraction(rates["dgr"], rates["deep"])
    return out


def _kee_slice(slice_: dict, techniques: list[str]) -> dict:
    base = slice_["baseline"]["accuracy"]
    return {t: _kee_technique(slice_[t], base) for t in techniques if t in slice_}


def kee(results: dict) -> dict:
    techniques = results["techniques"]
    per_technique = _kee_slice(results["overall"], techniques)
    return _envelope(
        results,
        "kee",
        {"accuracy": per_technique["baseline"]["accuracy"]},
        {
            "techniques": techniques,
            "per_technique": per_technique,
            "per_frequency_bin": {b: _kee_slice(s, techniques) for b, s in results["per_frequency_bin"].items()},
        },
    )


# --- qa -----------------------------------------------------------------------------------------
def qa(results: dict) -> dict:
    splits = results["splits"]
    # EM is 0/1 per item, averaged and x100 in v1; F1 is a mean of non-binary scores
    per_split = {
        name: {
            "em": fraction(None if s["em"] is None else s["em"] / 100, s["n"]),
            "f1": point(None if s["f1"] is None else s["f1"] / 100, s["n"]),
        }
        for name, s in splits.items()
    }
    pref = results["edited_preference"]
    sliced = [k.split(":")[1] for k in results["headline"] if k.endswith(":em")]  # "qa:new:em" -> "new"
    headline = {f"{name}_em": per_split[name]["em"] for name in sliced}
    if pref["n"]:
        headline["prefers_updated"] = fraction(pref["prefers_updated"], pref["n"])
    return _envelope(
        results,
        "qa",
        headline,
        {
            "per_split": per_split,
            "edited_preference": {"prefers_updated": fraction(pref["prefers_updated"], pref["n"]), "ties": pref["ties"]},
        },
    )


# --- truefalse ----------------------------------------------------------------------------------
def _tf_summary(s: dict) -> dict:
    return {"accuracy": fraction(s["accuracy"], s["n"]), "uncalibrated_accuracy": fraction(s["uncalibrated_accuracy"], s["n"])}


def truefalse(results: dict) -> dict:
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
    return _envelope(results, "truefalse", overall, metrics)


# --- xteval -------------------------------------------------------------------------------------
_GAP_FIGURES = ("acc_D", "downstream_accuracy", "usable_knowledge", "gap1", "gap2")


def xteval(results: dict) -> dict:
    n = results["n_facts"]
    per_setting = {
        name: {k: point(s[k]["mean"], n, std=s[k]["std"], runs=len(s[k]["values"])) for k in _GAP_FIGURES}
        for name, s in results["settings"].items()
    }
    first = next(iter(per_setting.values()))
    model = {"name": results["model"], "identity": results.get("model_identity")}
    envelope = _envelope(
        results,
        "xteval",
        {k: first[k] for k in ("usable_knowledge", "acc_D", "downstream_accuracy")},
        {"per_setting": per_setting},
        model=model,
    )
    envelope["dataset"] = {"path": results.get("dataset"), "split": results.get("dataset_split")}
    envelope["settings"] = results.get("config", {})
    return envelope


ADAPTERS = {
    "results.extraction.v1": extraction,
    "results.kee.v1": kee,
    "results.qa.v1": qa,
    "results.truefalse.v1": truefalse,
    "results.xteval.v1": xteval,
}


def to_v2(results: dict, path: Path) -> dict:
    schema = results.get("schema")
    adapter = ADAPTERS.get(schema)
    if adapter is None:
        raise InputError(
            path,
            f"unknown results schema {schema!r}; expected kbench.results.v2 or one of " + ", ".join(sorted(ADAPTERS)),
            key="schema",
        )
    try:
        return adapter(results)
    except (KeyError, TypeError) as exc:
        raise InputError(path, f"not a valid {schema} file (missing or malformed {exc})") from exc
