"""`kbench claims plan SUITE.toml`: before anything runs, how far the suite's sizes can decide its
claims. For each measurable claim of the claim sets the suite names, and each task entry and dataset
the claim reads: the n per cell the suite's settings give (limit, seeds, techniques, models), the
smallest difference detectable at 80% power after Holm over the set's directional tests, the n an
interval claim needs to fit inside its margin, and, where the paper prints an effect
(`Claim.paper_effect`), the n needed to detect it; across models, the models in the claim's scope
against the 5 a sign test needs. The formulas are `kbench.claims.power`'s.

Where n depends on what the model knows (MAPLE's Gain counts the baseline's failures |F_base|), the
plan assumes the rates of `kbench.claims.plan_sizes` (or the paper's printed ones), and prints them:
the plan sizes a run, it predicts no outcome.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from kbench.claims import power
from kbench.claims.plan_sizes import ASSUMED, TARGET, Design, rows_of, settings_of, unplanned
from kbench.claims.sets import SETTINGS, Claim, claim_set, in_scope, provides
from kbench.claims.statistics import STATISTICS
from kbench.claims.verdicts import ALPHA, MIN_MODELS
from kbench.suite.spec import Suite, TaskEntry

if TYPE_CHECKING:
    from kbench.evaluate.task import TaskSettings


@dataclass
class Row:
    claim: str
    direction: str
    column: str
    models: list[str]
    n: str
    detectable: str
    paper: str
    limit_needed: int | None  # the limit (facts, statements) the claim needs at the plan's target
    directional: bool  # takes part in Holm


def _columns(suite: Suite, claim: Claim) -> list[tuple[str, TaskEntry, str, list[TaskEntry]]]:
    """(column, the entry whose sizes count, dataset, every entry of the column) for each test of the
    claim: one per task entry and dataset ("cell", "scale"), one per dataset ("model", "entries")."""
    entries = [t for t in suite.spec.tasks if t.task == claim.task]
    datasets = lambda t: t.datasets or tuple(d.name for d in suite.spec.datasets)  # noqa: E731
    if claim.scope in ("cell", "scale", "contrast"):
        return [(f"{t.label} / {d}", t, d, [t]) for t in entries for d in datasets(t)]
    found = []
    for d in dict.fromkeys(d for t in entries for d in datasets(t)):
        group = [t for t in entries if d in datasets(t)]
        found.append((f"{claim.task} / {d}", group[0], d, group))
    return found


def _with_what_it_reads(claim: Claim, columns: list) -> list:
    """The columns with an entry that runs what the claim's statistic compares (its `lacks`: KEE's
    techniques), that entry's sizes counting."""
    lacks = STATISTICS.get(claim.statistic).lacks
    kept = []
    for column, _, dataset, group in columns:
        having = [e for e in group if lacks is None or lacks(claim, settings_of(e)) is None]
        kept += [(column, having[0], dataset, group)] if having else []
    return kept


def _missing_settings(claim: Claim, group: list[TaskEntry]) -> list[str]:
    """The settings a claim compares across entries that no entry of the column runs (its statistic's
    `missing`: LEFT's settings, XTEVAL's fine-tuning values)."""
    missing = STATISTICS.get(claim.statistic).missing
    return missing(claim, [settings_of(t) for t in group]) if missing else []


def _cell_design(claim: Claim, settings: TaskSettings, rows: int) -> Design:
    """The test of one cell, as the claim's statistic sizes it (its registry entry's `design`)."""
    design = STATISTICS.get(claim.statistic).design
    return design(claim, settings, rows) if design else unplanned(claim.statistic)


def _fmt(value: float | None, percent: bool = True) -> str:
    return "none (n too small)" if value is None else f"{value:.1%}" if percent else f"{value:.3g}"


def _limit(n: int | None, shares: tuple[float, ...]) -> int | None:
    return math.ceil(n / min(shares)) if n is not None and shares else None


def _interval_row(claim: Claim, design: Design) -> tuple[str, int | None]:
    """An equivalence / non-superiority claim: the expected half-width against the margin, and the limit that fits."""
    margin = claim.margin or 0.0  # declared by every interval claim (`Claim`)
    rate = ASSUMED["rate"] if design.reference is None else design.reference
    two = design.kind == "two"
    half = power.half_width(rate, rate if two else None, design.n1, design.n2)
    needed = power.n_for_margin(rate, rate if two else None, margin)
    limit = _limit(needed, (design.share1,) + ((design.share2,) if two else ()))
    fits = half is not None and half < margin
    group = " per group" if two else ""
    return f"half-width {_fmt(half)} vs margin ±{margin} ({'fits' if fits else f'needs n {needed}{group}'})", limit


def _directional_row(claim: Claim, design: Design, alpha: float, models: int) -> str:
    if design.kind == "proof":
        return f"any gap above 0: one miss among ≈ {design.n1:.0f} items decides"
    if design.kind == "rank":
        points = models if claim.scope == "scale" else int(design.n1)
        smallest = power.smallest_rank_p(points)
        verdict = "can decide" if smallest < alpha else "cannot decide"
        return f"{points} points: smallest exact p {smallest:.3g} vs alpha {alpha:.3g} after Holm ({verdict})"
    if design.kind == "bootstrap":
        return "a bootstrap interval (no power formula; outside Holm)"
    if design.kind == "one":
        return _fmt(power.detectable_one(design.against, design.n1, alpha)) + f" from {design.against:g}"
    return _fmt(power.detectable_two(ASSUMED["rate"], design.n1, design.n2, alpha)) + f" at {ASSUMED['rate']:.0%}"


def _target_limit(design: Design, alpha: float) -> int | None:
    """The limit that detects TARGET (at the assumed rate, or from the reference)."""
    if design.kind == "two":
        rate = ASSUMED["rate"]
        return _limit(power.n_two_proportions(rate + TARGET, rate, alpha), (design.share1, design.share2))
    if design.kind == "one":
        base = min(design.against, 1 - design.against)
        return _limit(power.n_one_proportion(base + TARGET, base, alpha), (design.share1,))
    return None


def _paper_row(claim: Claim, design: Design, alpha: float) -> tuple[str, int | None]:
    effect = claim.paper_effect
    if not effect or design.kind not in ("one", "two"):
        return ("" if not effect else f"{effect['value']:g} vs {effect['against']:g}"), None
    a, b = float(effect["value"]), float(effect["against"])
    interval = claim.direction not in ("greater", "less")
    if interval:  # the paper's rates inside the margin: the n for the interval to fit
        room = (claim.margin or 0.0) - (abs(a - b) if claim.direction == "equivalent" else a - b)
        needed = power.n_for_margin(a, b if design.kind == "two" else None, room) if room > 0 else None
    elif design.kind == "two":
        needed = power.n_two_proportions(a, b, alpha)
    else:
        needed = power.n_one_proportion(a, b, alpha)
    if needed is None:
        return f"{a:.1%} vs {b:.1%}: no n detects it (equal rates, or beyond the margin)", None
    shares = (design.share1,) + ((design.share2,) if design.kind == "two" else ())
    limit = _limit(needed, shares)
    return f"{a:.1%} vs {b:.1%}: n {needed}{' per group' if design.kind == 'two' else ''}, limit {limit}", limit


_WITH_P = ("one", "two", "rank", "proof")  # the designs whose test has a p-value: Holm counts them


def _direction(claim: Claim) -> str:
    return {"greater": "> 0", "less": "< 0", "not_greater": f"≤ +{claim.margin}"}.get(claim.direction, f"within ±{claim.margin}")


def _row(claim: Claim, column: str, scoped: list[str], design: Design, alpha: float) -> Row:
    directional = claim.direction in ("greater", "less") and design.kind in _WITH_P
    if design.kind == "none":
        return Row(claim.label, _direction(claim), column, scoped, design.what, "", "", None, False)
    if claim.direction in ("greater", "less"):
        detectable, limit = _directional_row(claim, design, alpha, len(scoped)), _target_limit(design, alpha)
    else:
        detectable, limit = _interval_row(claim, design)
    paper, paper_limit = _paper_row(claim, design, alpha)
    n = design.what if claim.scope not in ("scale", "contrast") else f"{len(scoped)} models in scope; {design.what}"
    return Row(claim.label, _direction(claim), column, scoped, n, detectable, paper, paper_limit or limit, directional)


def _tests(suite: Suite, claim: Claim, models: list[tuple[str, dict]]) -> list[tuple[Claim, str, list[str], Design]]:
    """(claim, column, the models in its scope, the cell's design) for each test the claim makes on the suite."""
    scoped = [label for label, row in models if in_scope(claim, label, row)]
    if claim.requires:  # a model without the setting the claim requires is not tested ("setting not met")
        provided = [label for label, row in models if label in scoped and provides(claim.requires, row)]
        if scoped and not provided:
            return [
                (claim, f"{claim.task} / *", [], Design("none", f"setting not met: no model is {SETTINGS[claim.requires][0]}", 0))
            ]
        scoped = provided
    if not scoped:
        return [(claim, f"{claim.task} / *", [], Design("none", "outside the claim's scope: every model", 0))]
    sizes = claim.params.get("min_sizes", 2)
    if claim.scope == "scale" and len(scoped) < sizes:
        return [
            (
                claim,
                f"{claim.task} / *",
                scoped,
                Design("none", f"no data: {len(scoped)} models in scope, the trend needs {sizes}", 0),
            )
        ]
    columns = _columns(suite, claim)
    found = []
    lacks = STATISTICS.get(claim.statistic).lacks
    if lacks:  # an entry without what the statistic compares has no data for it (DeCoRe's head counts)
        lacking = columns and lacks(claim, settings_of(columns[0][1]))
        columns = _with_what_it_reads(claim, columns)
        if lacking and not columns:
            found.append((claim, f"{claim.task} / *", scoped, Design("none", f"no data: no entry runs {lacking}", 0)))
    for column, entry, dataset, group in columns:
        rows, missing = rows_of(suite, entry, dataset), _missing_settings(claim, group)
        if missing:
            design = Design("none", f"no data: the suite runs no {', '.join(missing)} entry", 0)
        elif rows is None and not STATISTICS.get(claim.statistic).rowless:
            design = Design("none", "the whole dataset (its size is known only once built)", 0)
        else:
            design = _cell_design(claim, settings_of(entry), rows or 0)
        found.append((claim, column, scoped, design))
    return found


def plan(suite: Suite) -> dict:
    """The plan of every claim set the suite names: {"suite", "alpha", "power", "assumed", "sets":
    [{"name", "holm_tests", "rows": [Row], "across": [{"claim", "models", "needed"}]}]}."""
    from kbench.suite.model_table import read_record

    # the model table's rows as far as they are known before a run: the spec, and a `kbench read` checkpoint's record
    models = [(m.label, {"model": m.model, "read": read_record(m.model)}) for m in suite.spec.models]
    sets = []
    for name in suite.spec.suite.claims:
        pending = [test for claim in claim_set(name).tested for test in _tests(suite, claim, models)]
        tests = sum(
            1 if c.scope in ("scale", "contrast") else len(s)
            for c, _, s, d in pending
            if c.direction in ("greater", "less") and d.kind in _WITH_P
        )
        alpha = ALPHA / max(tests, 1)  # Holm's first step: the bar of the smallest p
        across = {
            c.label: {"claim": c.label, "models": len(s), "needed": MIN_MODELS}
            for c, _, s, _ in pending
            if c.scope not in ("scale", "contrast")
        }
        sets.append(
            {
                "name": name,
                "holm_tests": tests,
                "rows": [asdict(_row(c, col, s, d, alpha)) for c, col, s, d in pending],
                "across": list(across.values()),
            }
        )
    return {"suite": suite.spec.suite.name, "alpha": ALPHA, "power": power.POWER, "assumed": ASSUMED, "sets": sets}
