"""The acquisition-utilization gaps of XTEVAL (docs/definitions.md, "Acquisition-utilization gaps"), as pure functions.

    acc_D      the share of the diagnostic facts the model predicts at top-1 (|D^theta| / |D|)
    gap1       = 1 - acc_D                          knowledge the model never acquired
    usable     = acc_D * downstream_accuracy        acquired knowledge the fine-tuned model uses
    gap2       = acc_D * (1 - downstream_accuracy)  acquired knowledge it fails to use

so gap1 + usable + gap2 = 1 (the three stacked bars of the paper's chart). Aggregates over
seeds report the mean and the sample standard deviation (ddof=1, what pandas' `std` gives);
a single run has std 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _check_fraction(name: str, value: float) -> float:
    if not (0.0 <= value <= 1.0) or math.isnan(value):
        raise ValueError(f"{name} must be a fraction in [0, 1], got {value!r}")
    return float(value)


def gap_figures(acc_d: float, downstream_accuracy: float) -> dict[str, float]:
    """The five figures of one run: acc_D, downstream_accuracy, usable_knowledge, gap1, gap2."""
    acc_d = _check_fraction("acc_D", acc_d)
    downstream = _check_fraction("downstream_accuracy", downstream_accuracy)
    return {
        "acc_D": acc_d,
        "downstream_accuracy": downstream,
        "usable_knowledge": acc_d * downstream,
        "gap1": 1.0 - acc_d,
        "gap2": acc_d * (1.0 - downstream),
    }


def mean_std(values: Sequence[float]) -> dict[str, float]:
    """{"mean", "std"} with the sample standard deviation (ddof=1); a single value has std 0."""
    if not values:
        raise ValueError("mean_std needs at least one value")
    mean = sum(values) / len(values)
    if len(values) == 1:
        return {"mean": mean, "std": 0.0}
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return {"mean": mean, "std": math.sqrt(var)}
