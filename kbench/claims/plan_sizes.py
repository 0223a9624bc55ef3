"""What each claim statistic's test counts, from a task entry's settings: the `Design` of one cell
(two proportions, one against a reference, a rank correlation, a mean over runs...), its n and the
share of the limit each group is, for `kbench claims plan`. Each statistic gives its own design
beside it (its registry entry's `design`, `kbench.claims.statistics`); here is what they share.
Where n depends on what the model knows (MAPLE's Gain counts the baseline's failures |F_base|), the
rates in ASSUMED stand in, or the paper's printed ones (the task's claims module names them); the
plan prints them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbench.suite.spec import Suite, TaskEntry

if TYPE_CHECKING:
    from kbench.evaluate.task import TaskSettings

# rates no paper prints for the suite's models, assumed (printed with the plan)
ASSUMED = {
    "accuracy": 0.5,  # the greedy baseline's accuracy: |F_base| = |S_base| = half the facts
    "shallow": 0.5,  # the shallow share of F_base (MAPLE's partition)
    "tied": 0.5,  # PRS Tied among unrecovered failures: the moved half decides "worsened"
    "rate": 0.5,  # a rate two groups compare at: the largest variance, so the detectable difference is an upper bound
    "edited": 0.2,  # EvolvingQA's edited questions (the packaged recipe: 60 of 300)
    "bin": 1 / 3,  # each frequency bin (head, torso, tail) of an extraction dataset
}
# a directional claim whose paper prints no effect is sized to detect this difference (kbench's planning target)
TARGET = 0.10
# test rows of the packaged recipes: lama's comment (28 T-REx + 3 Google-RE relations); maple-wiki (133 facts),
# left-textbook (506 test statements) and evolving (300 questions, 60 of them edited), builds of 2026-12-05.
# Other datasets: the limit alone.
RECIPE_ROWS = {"lama": 28409, "maple-wiki": 133, "left-textbook": 506, "evolving": 300}
LAMA_RELATIONS = 31


@dataclass(frozen=True)
class Design:
    """One cell's test: `kind` "two" (two proportions), "one" (one against `reference`), "rank" (a rank
    correlation over `n1` points), "proof" (one miss among `n1` items proves a gap above 0: XTEVAL's Gaps),
    "bootstrap" (an interval with no power formula), "none" (no test: `what` says why); `share1` and
    `share2` the share of the limit each group is (to turn an n into a limit); `what` says what n counts."""

    kind: str
    what: str
    n1: float
    n2: float = 0.0  # "two" designs only
    share1: float = 1.0
    share2: float = 1.0
    reference: float | None = None

    @property
    def against(self) -> float:
        """The reference of a "one" design (every one names it)."""
        if self.reference is None:
            raise ValueError(f"a {self.kind!r} design has no reference")
        return self.reference


def settings_of(entry: TaskEntry) -> TaskSettings:
    """The entry's settings as the task reads them (defaults filled in; the suite validated them)."""
    from kbench.evaluate.task import TASKS

    return TASKS.get(entry.task).Settings(**entry.settings)


def rows_of(suite: Suite, entry: TaskEntry, dataset: str) -> int | None:
    """The items a cell evaluates: the limit, at most the packaged recipe's test rows (lama's capped per
    relation by its override); None when neither is known before the build."""
    spec, limit = suite.dataset(dataset), settings_of(entry).limit
    rows = RECIPE_ROWS.get(spec.recipe or "")
    capped = [o for o in spec.overrides if o.startswith("load.max_per_relation=")]
    if spec.recipe == "lama" and capped:
        rows = LAMA_RELATIONS * int(capped[0].split("=", 1)[1])
    return min(x for x in (limit, rows) if x) if limit or rows else None


def unplanned(statistic: str) -> Design:
    return Design("none", f"no size plan for statistic {statistic}", 0)
