"""XTEVAL's v1 results (`schemas/results.xteval.v1.json`) as the v2 envelope the report reads
(`kbench.report.legacy`): v1 gives mean and std over seeds, a point Estimate with `std` and `runs`."""

from __future__ import annotations

from kbench.report.legacy import envelope, point

_GAP_FIGURES = ("acc_D", "downstream_accuracy", "usable_knowledge", "gap1", "gap2")


def from_v1(results: dict) -> dict:
    n = results["n_facts"]
    per_setting = {
        name: {k: point(s[k]["mean"], n, std=s[k]["std"], runs=len(s[k]["values"])) for k in _GAP_FIGURES}
        for name, s in results["settings"].items()
    }
    first = next(iter(per_setting.values()))
    model = {"name": results["model"], "identity": results.get("model_identity")}
    converted = envelope(
        results,
        "xteval",
        {k: first[k] for k in ("usable_knowledge", "acc_D", "downstream_accuracy")},
        {"per_setting": per_setting},
        model=model,
    )
    converted["dataset"] = {"path": results.get("dataset"), "split": results.get("dataset_split")}
    converted["settings"] = results.get("config", {})
    return converted
