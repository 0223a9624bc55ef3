"""EvolvingQA's v1 results (`schemas/results.qa.v1.json`) as the v2 envelope the report reads
(`kbench.report.legacy`): v1 EM was x100, F1 a mean of non-binary scores."""

from __future__ import annotations

from kbench.report.legacy import envelope, fraction, point


def from_v1(results: dict) -> dict:
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
    return envelope(
        results,
        "qa",
        headline,
        {
            "per_split": per_split,
            "edited_preference": {"prefers_updated": fraction(pref["prefers_updated"], pref["n"]), "ties": pref["ties"]},
        },
    )
