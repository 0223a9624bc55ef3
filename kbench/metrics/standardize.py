"""KoLA standardised scores: make numbers from different tasks comparable across models.

    1. per task t, over the models that have a score on it:
           z[m, t] = (x[m, t] - mean_t) / std_t      (population std, ddof = 0, as KoLA's code)
    2. min-max scale every z of every task together:
           s[m, t] = 100 * (z[m, t] - min z) / (max z - min z)

Degenerate cases, chosen so that "no difference between models" never looks like one:
  * std_t == 0 (one model, or all models equal on t): every z on t is 0, the mean.
  * max z == min z (e.g. all z are 0): every standardised score is 50, the middle of the scale.
A missing score (None) stays missing and takes no part in the mean, std, min or max.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

Scores = Mapping[str, Mapping[str, float | None]]  # model -> task -> raw score


def z_scores(scores: Scores) -> dict[str, dict[str, float | None]]:
    """model -> task -> z (population std per task; 0 when the std is 0)."""
    tasks = sorted({t for per_task in scores.values() for t in per_task})
    out: dict[str, dict[str, float | None]] = {m: {} for m in scores}
    for task in tasks:
        present = {m: float(v[task]) for m, v in scores.items() if v.get(task) is not None}
        if not present:
            for m in scores:
                out[m][task] = None
            continue
        mean = sum(present.values()) / len(present)
        std = math.sqrt(sum((x - mean) ** 2 for x in present.values()) / len(present))
        for m in scores:
            out[m][task] = None if m not in present else (0.0 if std == 0 else (present[m] - mean) / std)
    return out


def standardized_scores(scores: Scores) -> dict[str, dict[str, float | None]]:
    """model -> task -> standardised score in [0, 100] (see the module docstring)."""
    z = z_scores(scores)
    values = [v for per_task in z.values() for v in per_task.values() if v is not None]
    if not values:
        return z
    low, high = min(values), max(values)
    return {
        m: {t: None if v is None else (50.0 if high == low else 100.0 * (v - low) / (high - low)) for t, v in per_task.items()}
        for m, per_task in z.items()
    }
