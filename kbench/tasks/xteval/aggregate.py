"""Mean and std of the XTEVAL figures, taken over what the paper takes them over (Figure 4).

- acc_D and Gap 1 = 1 - acc_D depend on the extraction seed only: mean and sample std over the
  distinct extraction seeds ("reported over three seeds", paper Figure 4a). The runs of one
  extraction seed share one value; averaging over the 27 runs would count it 9 times and shrink
  the std.
- downstream accuracy, usable knowledge and Gap 2 differ per run (extraction x split x
  fine-tune): mean and sample std over the runs ("averaged over 27 runs", Figure 4b). With
  the same number of runs per extraction seed, usable + Gap 1 + Gap 2 still add to 1 in the means.
- chance: the expected accuracy of a random ranking, the mean over test queries of
  1 / candidates, averaged over runs like the downstream accuracy it bounds from below.

Each figure says in `std_over` what its std is over and in `n` how many values it has.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbench.tasks.xteval.gaps import mean_std

PER_EXTRACTION = ("acc_D", "gap1")
PER_RUN = ("downstream_accuracy", "usable_knowledge", "gap2", "chance_accuracy")
STD_OVER = {"extraction": "extraction seeds", "run": "runs (extraction x split x fine-tune seeds)"}


def _figure(values: Sequence[float], over: str) -> dict:
    return {**mean_std(values), "std_over": STD_OVER[over], "n": len(values), "values": list(values)}


def aggregate_setting(runs: Sequence[dict]) -> dict:
    """The figures of one setting (iid or ood) from its runs (each with an `extraction_seed`)."""
    if not runs:
        raise ValueError("aggregate_setting needs at least one run")
    per_seed: dict[int, dict] = {}
    for run in runs:
        per_seed.setdefault(run["extraction_seed"], run)
    seeds = sorted(per_seed)
    out = {key: _figure([float(per_seed[s][key]) for s in seeds], "extraction") for key in PER_EXTRACTION}
    out.update({key: _figure([float(r[key]) for r in runs], "run") for key in PER_RUN})
    return out
