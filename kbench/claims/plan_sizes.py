"""What each claim statistic's test counts, from a task entry's settings: the `Design` of one cell
(two proportions, one against a reference, a rank correlation, a mean over runs...), its n and the
share of the limit each group is, for `kbench claims plan`. Where n depends on what the model knows
(MAPLE's Gain counts the baseline's failures |F_base|), the rates in ASSUMED stand in, or the paper's
printed ones (XTEVAL's acc_D and sigma); the plan prints them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbench.claims.sets import Claim
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
# XTEVAL's printed number: OPT-125M predicts 34% of the facts (L179), the share of D that is D^theta
XTEVAL_ACC_D = 0.34
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
    n2: float | None = None
    share1: float = 1.0
    share2: float = 1.0
    reference: float | None = None


_SHARE = {  # a KEE metric's group as a share of the facts
    "gain": ("F_base", 1 - ASSUMED["accuracy"]),
    "loss": ("S_base", ASSUMED["accuracy"]),
    "prs.tied": ("unrecovered failures ≈ F_base", 1 - ASSUMED["accuracy"]),
    "beyond_sampling.*.sgr": ("D_shallow", (1 - ASSUMED["accuracy"]) * ASSUMED["shallow"]),
    "beyond_sampling.*.dgr": ("D_deep", (1 - ASSUMED["accuracy"]) * (1 - ASSUMED["shallow"])),
}


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


def kee_lacks(claim: Claim, settings: TaskSettings) -> str | None:
    """What a KEE entry lacks for the claim (None: it has what the statistic reads)."""
    p, name = claim.params, claim.statistic
    techniques = [t for t in settings.techniques if t != "baseline"]
    if name == "technique_above":
        others = [t for t in p.get("below") or techniques if t not in p["above"]]
        absent = [t for t in p["above"] if t not in techniques]  # the statistic needs every one of them
        if absent:
            return " and ".join(absent)
        wanted = [] if set(others) & set(techniques) else others
    elif name in ("prs_share", "sgr_minus_dgr"):
        wanted = [] if set(p["techniques"]) & set(techniques) else list(p["techniques"])
    elif name in ("proportion_vs", "technique_setting_difference", "technique_lowest_on"):
        wanted = [] if p["technique"] in techniques else [p["technique"]]
    elif name == "shallow_share" and settings.sweep_max < p["of"]:
        return f"K up to {p['of']} (sweep_max)"
    else:
        wanted = [] if len(techniques) >= 2 else ["two techniques beside the baseline"]
    return " or ".join(wanted) or None


def _kee(claim: Claim, settings: TaskSettings, rows: int) -> Design:
    p, name = claim.params, claim.statistic
    if name == "technique_above":
        what, share = _SHARE[p["metric"]]
        return Design("two", f"{what} ≈ {share:.0%} of {rows} facts, per technique", rows * share, rows * share, share, share)
    if name in ("prs_share", "proportion_vs", "shallow_share"):
        if name == "prs_share":
            what, share = _SHARE["prs.tied"]
            if p["share"] == "worsened":
                what, share = "moved failures (Improved + Worsened)", share * (1 - ASSUMED["tied"])
        elif name == "proportion_vs":
            what, share = _SHARE[p["metric"]]
        else:
            what, share = _SHARE["beyond_sampling.*.sgr"]
            what += f" at K = {p['of']}"
        return Design(
            "one", f"{what} ≈ {share:.0%} of {rows} facts", rows * share, share1=share, reference=p.get("reference", 0.5)
        )
    if name == "sgr_minus_dgr":
        (_, s), (_, d) = _SHARE["beyond_sampling.*.sgr"], _SHARE["beyond_sampling.*.dgr"]
        return Design("two", f"D_shallow ≈ {s:.0%}, D_deep ≈ {d:.0%} of {rows} facts", rows * s, rows * d, s, d)
    if name == "level_agreement":  # PRS is undefined for the temperature baselines (they change no prompt or weight)
        techniques = [t for t in settings.techniques if t != "baseline"]
        if p["level"].startswith("prs"):
            techniques = [t for t in techniques if not t.startswith("temp")]
        return Design("rank", f"{len(techniques)} techniques", len(techniques))
    if name == "ranking_stability":
        share = 1 - ASSUMED["accuracy"]
        return Design("bootstrap", f"F_base ≈ {share:.0%} of {rows} facts (bootstrap over them)", rows * share)
    if name == "technique_lowest_on":  # a model of the claim's against every other model: unpaired
        what, share = _SHARE[p["metric"]]
        return Design("two", f"{what} ≈ {share:.0%} of {rows} facts, per model", rows * share, rows * share, share, share)
    if name == "technique_setting_difference":
        return Design("two", f"{rows} facts, paired across entries", rows, rows)
    return _unplanned(name)


def _xteval(claim: Claim, settings: TaskSettings, rows: int) -> Design:
    """XTEVAL's downstream figures are read on the test queries (one per test fact) and drawn with the
    task's two-level bootstrap (runs, then items): at these sizes the items' variance dominates the
    runs' (XTEVAL prints sigma <= 0.011 over its 27 runs, L103), so a downstream accuracy is planned as
    a proportion over its test queries."""
    name = claim.statistic
    test = XTEVAL_ACC_D * (1 - settings.train_fraction)  # D^theta's test share of D
    per = f"test queries ≈ {test:.0%} of {rows} facts"
    if name == "xteval_gap1":
        return Design("proof", f"{rows} facts of D", rows)
    if name == "xteval_gap2":
        return Design("proof", per, rows * test)
    if name == "xteval_split_spread":
        if settings.split_seeds < 2:
            return Design("none", "no data: the split spread needs 2 split seeds or more", 0)
        return Design("two", f"{per}, per split seed", rows * test, rows * test, test, test)
    if name == "largest_minus_smallest":
        return Design("two", f"{per}, per model", rows * test, rows * test, test, test)
    if name == "xteval_iid_minus_ood":
        if settings.setting != "both":
            return Design("none", 'no data: IID − OOD needs `setting = "both"` in one entry', 0)
        return Design("two", f"{per} per setting (clustered by relation)", rows * test, rows * test, test, test)
    if name == "downstream_across_finetune":
        return Design("two", f"{per}, paired across entries", rows * test, rows * test, test, test)
    return _unplanned(name)


def finetune_value(settings: TaskSettings, param: str) -> float:
    """An XTEVAL entry's value of a fine-tuning setting (`lr`, `negatives_per_type`)."""
    return float(getattr(settings.finetune, param))


def cell_design(claim: Claim, settings: TaskSettings, rows: int) -> Design:
    if claim.statistic in ("size_trend", "accuracy_size_trend"):  # a rank correlation over the models
        return Design("rank", "models", 0)
    if claim.task == "kee":
        return _kee(claim, settings, rows)
    if claim.task == "xteval":
        return _xteval(claim, settings, rows)
    if claim.statistic == "head_minus_tail":
        share = ASSUMED["bin"]
        return Design("two", f"head and tail ≈ {share:.0%} each of {rows} facts", rows * share, rows * share, share, share)
    if claim.statistic == "outdated_minus_updated_em":
        share = ASSUMED["edited"]
        return Design("two", f"edited ≈ {share:.0%} of {rows} questions, paired", rows * share, rows * share, share, share)
    if claim.statistic in ("setting_minus_setting", "closed_minus_prior"):
        return Design("two", f"{rows} statements per setting", rows, rows)
    return _unplanned(claim.statistic)


def _unplanned(statistic: str) -> Design:
    return Design("none", f"no size plan for statistic {statistic}", 0)


ROWLESS = {"size_trend", "accuracy_size_trend", "level_agreement"}  # statistics whose n is no dataset's rows
