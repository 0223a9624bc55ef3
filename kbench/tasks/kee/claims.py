"""KEE's claim statistics (MAPLE's claims), registered in `kbench.claims.statistics.STATISTICS`, each
with the size plan `kbench claims plan` gives it and the readings of MAPLE's recovery rule
(`kbench.claims.readings`). They read a run's `per_technique` blocks (Gain, Loss, PRS, SGR / DGR
per sampling partition), its `ranking_stability` and `shallow_by_k`, and its item rows."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kbench.claims.plan_sizes import ASSUMED, Design, unplanned
from kbench.claims.statistics import Labelled, against_reference, kendall_exact, paired_test, proportion_at, shifted, statistic
from kbench.metrics.uncertainty import difference_unpaired, fisher_exact_p
from kbench.report.items import read_items
from kbench.report.runs import Run

if TYPE_CHECKING:
    from kbench.claims.sets import Claim
    from kbench.tasks.kee.task import KeeSettings


def _per_technique(run: Run) -> dict:
    return run.metrics.get("per_technique") or {}


def _reading_names(run: Run) -> list[str]:
    """The readings the run's techniques record, in the order first met."""
    names: dict[str, None] = {}
    for block in _per_technique(run).values():
        for partition in (block.get("beyond_sampling") or {}).values():
            names.update(dict.fromkeys((partition or {}).get("readings") or {}))
    return list(names)


def _under_reading(run: Run, reading: str) -> Run:
    """The run with each technique's SGR / DGR replaced by their values under `reading` (a technique
    without that reading keeps its own: a KEE technique recovers by its one greedy answer)."""
    metrics = copy.deepcopy(run.metrics)
    for block in (metrics.get("per_technique") or {}).values():
        for partition in (block.get("beyond_sampling") or {}).values():
            partition.update(((partition or {}).get("readings") or {}).get(reading) or {})
    return dataclasses.replace(run, results={**run.results, "metrics": metrics})


def readings(run: Run) -> dict[str, Run]:
    """MAPLE never says when a temperature-sampling method "recovers" a failure for SGR / DGR: any of
    its K seed-B samples correct, a majority of them, or one sample. A KEE run records its own
    reading as `beyond_sampling[partition]["sgr" / "dgr"]` and, beside it, every reading's rates
    under `beyond_sampling[partition]["readings"][name]`: {reading: the run with that reading's rates}."""
    return {name: _under_reading(run, name) for name in _reading_names(run)}


# a KEE metric's group as a share of the facts (`kbench claims plan`)
_SHARE = {
    "gain": ("F_base", 1 - ASSUMED["accuracy"]),
    "loss": ("S_base", ASSUMED["accuracy"]),
    "prs.tied": ("unrecovered failures ≈ F_base", 1 - ASSUMED["accuracy"]),
    "beyond_sampling.*.sgr": ("D_shallow", (1 - ASSUMED["accuracy"]) * ASSUMED["shallow"]),
    "beyond_sampling.*.dgr": ("D_deep", (1 - ASSUMED["accuracy"]) * (1 - ASSUMED["shallow"])),
}


def lacks(claim: Claim, settings: KeeSettings) -> str | None:
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


def design(claim: Claim, settings: KeeSettings, rows: int) -> Design:
    """The test of one KEE cell: n counts the facts of the group a metric reads (Gain the baseline's
    failures |F_base|, Loss its successes...), at the rates `ASSUMED`."""
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
    return unplanned(name)


KEE: dict[str, Any] = {"design": design, "lacks": lacks, "readings": readings}  # every KEE statistic's hooks


def _prs_undefined(run: Run, name: str) -> bool:
    """Whether a technique's PRS is undefined. PRS compares the gold rank under the technique with
    the baseline's, and temperature sampling changes neither the prompt nor the weights: its rank
    is the baseline's, every failure it leaves is Tied by construction (MAPLE's Figure 2 has no τ
    rows). KEE records such a PRS as undefined (n = 0, an "undefined" reason); runs written before
    carry a computed one, told by the sampling temperature among the technique's recorded params
    (RECITE's is `recite_temperature`), or, in a run without params, by MAPLE's τ names (temp0.7)."""
    prs = _per_technique(run).get(name, {}).get("prs") or {}
    if not prs.get("n") or "undefined" in prs:
        return True
    params = (run.metrics.get("technique_params") or {}).get(name)
    return "temperature" in params if isinstance(params, dict) else name.startswith("temp")


@statistic("technique_above", **KEE)
def technique_above(run: Run, metric: str, above: Sequence[str], below: Sequence[str] = (), pick: str = "weakest") -> dict | None:
    """metric(a) − metric(b) for a in `above`, b in `below` (default: every other non-baseline
    technique of the run), reported for the pair that decides the claim: the smallest difference
    ("weakest": every a above every b holds only if it does), or the largest in size ("farthest":
    an equivalence holds only if it does), or the largest ("largest": A no better than any b holds
    only if it does). `metric` is a path in a technique's block; "*" stands for each sampling
    partition of SGR / DGR. A PRS metric leaves out the techniques whose PRS is undefined
    (`_prs_undefined`). Unpaired Newcombe interval, two-sided Fisher exact p (conservative: the
    techniques share the baseline's failures)."""
    table = _per_technique(run)
    if metric.startswith("prs."):
        table = {name: block for name, block in table.items() if not _prs_undefined(run, name)}
    if any(a not in table for a in above):
        return None
    others = [t for t in (below or [t for t in table if t != "baseline" and t not in above]) if t in table]
    pairs = []
    for a in above:
        for b in others:
            partitions = table[a].get("beyond_sampling", {}) if "*" in metric else {"": None}
            for partition in partitions:
                path = metric.replace("*", partition)
                first, second = proportion_at(table[a], metric, partition), proportion_at(table[b], metric, partition)
                if first and second:
                    pairs.append(
                        (a, b, path, difference_unpaired(first["k"], first["n"], second["k"], second["n"]), first, second)
                    )
    if not pairs:
        return None
    key = {"weakest": lambda p: p[3]["value"], "farthest": lambda p: -abs(p[3]["value"]), "largest": lambda p: -p[3]["value"]}
    a, b, path, estimate, first, second = min(pairs, key=key[pick])
    return {
        "estimate": estimate,
        "p_value": fisher_exact_p(first["k"], first["n"], second["k"], second["n"]),
        "test": f"{path}: {a} − {b} (the deciding pair of {len(pairs)}), two-sided Fisher exact",
    }


@statistic("prs_share", **KEE)
def prs_share(run: Run, techniques: Sequence[str], share: str, reference: float = 0.5, pick: str = "weakest") -> dict | None:
    """PRS on the failures a technique leaves unrecovered. share "moved": 1 − Tied among them;
    "worsened": Worsened among the moved ones (Improved + Worsened). Minus `reference`, with the
    Wilson interval; exact two-sided binomial p against `reference`. Of several techniques the
    deciding one (smallest value, or farthest from the reference)."""
    found = []
    for name in techniques:
        prs = _per_technique(run).get(name, {}).get("prs")
        if not prs or not prs.get("n"):
            continue
        improved, worsened, n = prs["improved"]["k"], prs["worsened"]["k"], prs["n"]
        k, total = (improved + worsened, n) if share == "moved" else (worsened, improved + worsened)
        if total:
            found.append((name, k, total, shifted(k, total, reference)))
    if not found:
        return None
    key = (lambda f: f[3]["value"]) if pick == "weakest" else (lambda f: -abs(f[3]["value"]))
    name, k, total, _ = min(found, key=key)
    return against_reference(k, total, reference, f"{name}: {share} share vs {reference}, exact binomial")


@statistic("proportion_vs", **KEE)
def proportion_vs(run: Run, technique: str, metric: str, reference: float) -> dict | None:
    """metric(technique) − reference for each sampling partition ("*"), the largest one reported;
    exact two-sided binomial p."""
    block = _per_technique(run).get(technique, {})
    at = [proportion_at(block, metric, p) for p in block.get("beyond_sampling", {"": None})]
    found = [f for f in at if f]
    if not found:
        return None
    top = max(found, key=lambda f: f["k"] / f["n"])
    return against_reference(top["k"], top["n"], reference, f"{technique} {metric} vs {reference}, exact binomial")


@statistic("sgr_minus_dgr", **KEE)
def sgr_minus_dgr(run: Run, techniques: Sequence[str]) -> dict | None:
    """SGR − DGR (disjoint failure sets: Newcombe, Fisher), the smallest over techniques and partitions."""
    found = []
    for name in techniques:
        for partition, rates in _per_technique(run).get(name, {}).get("beyond_sampling", {}).items():
            sgr, dgr = proportion_at(rates, "sgr"), proportion_at(rates, "dgr")
            if sgr and dgr:
                found.append((name, partition, sgr, dgr, difference_unpaired(sgr["k"], sgr["n"], dgr["k"], dgr["n"])))
    if not found:
        return None
    name, partition, sgr, dgr, estimate = min(found, key=lambda f: f[4]["value"])
    return {
        "estimate": estimate,
        "p_value": fisher_exact_p(sgr["k"], sgr["n"], dgr["k"], dgr["n"]),
        "test": f"{name} at the {partition} partition: SGR − DGR, two-sided Fisher exact",
    }


@statistic("ranking_stability", **KEE)
def ranking_stability(run: Run, reference: float) -> dict | None:
    """The lowest Kendall tau (ranking at K against the reference K) over K, SGR / DGR and partitions,
    minus `reference`, with its bootstrap interval over base failures (no exact test)."""
    taus = [
        (f"{partition} {rate} K={k}", e)
        for partition, rates in (run.metrics.get("ranking_stability") or {}).items()
        for rate, by_k in rates.items()
        for k, e in by_k.items()
        if e.get("value") is not None and e.get("ci_low") is not None
    ]
    if not taus:
        return None
    where, low = min(taus, key=lambda t: t[1]["value"])
    estimate = {**low, **{key: low[key] - reference for key in ("value", "ci_low", "ci_high")}}
    return {"estimate": estimate, "p_value": None, "test": f"lowest tau at {where} minus {reference} (bootstrap interval)"}


@statistic("level_agreement", **KEE, rowless=True)
def level_agreement(run: Run, level: str, reverse: bool = False) -> dict | None:
    """Kendall tau-b of Gain with another metric level over the run's techniques (the baseline left
    out; a technique without both values too), exact permutation p. `level` is a path in a
    technique's block, "*" each sampling partition: the partition with the smallest tau decides.
    `reverse`: a lower value of the level counts as higher (PRS Tied: fewer tied, more moved). A
    PRS level leaves out the techniques whose PRS is undefined (`_prs_undefined`)."""
    table = {name: block for name, block in _per_technique(run).items() if name != "baseline"}
    if level.startswith("prs."):
        table = {name: block for name, block in table.items() if not _prs_undefined(run, name)}
    partitions = next((list(b.get("beyond_sampling", {})) for b in table.values()), []) if "*" in level else [""]
    found = []
    for partition in partitions:
        path = level.replace("*", partition)
        points = []
        for block in table.values():
            gain, other = (block.get("gain") or {}).get("value"), proportion_at(block, level, partition)
            if gain is not None and other:
                points.append((gain, -other["k"] / other["n"] if reverse else other["k"] / other["n"]))
        tested = kendall_exact([g for g, _ in points], [v for _, v in points]) if len(points) >= 3 else None
        if tested is not None:
            found.append((path, len(points), *tested))
    if not found:
        return None
    path, n, tau, p_value = min(found, key=lambda f: f[2])
    estimate = {"value": tau, "ci_low": None, "ci_high": None, "n": n, "interval": "none (rank correlation)"}
    lower = "lower " if reverse else ""
    test = f"Kendall tau-b of Gain with {lower}{path} over {n} techniques, exact permutation p"
    return {"estimate": estimate, "p_value": p_value, "test": test}


@statistic("shallow_share", **KEE)
def shallow_share(run: Run, k: int, of: int, reference: float) -> dict | None:
    """Shallow failures found by the first `k` seed-A samples among those the first `of` find (a
    proportion: the `k` samples are the first of the `of`), minus `reference`, with the Wilson
    interval and an exact two-sided binomial p; the partition farthest from the reference decides."""
    found = []
    for partition, counts in (run.metrics.get("shallow_by_k") or {}).items():
        at_k, at_of = counts.get(str(k)), counts.get(str(of))
        if at_k is not None and at_of:
            found.append((partition, at_k, at_of, shifted(at_k, at_of, reference)))
    if not found:
        return None
    partition, at_k, at_of, _ = min(found, key=lambda f: -abs(f[3]["value"]))
    test = f"shallow failures at K = {k} of those at K = {of} (the {partition} partition) vs {reference}, exact binomial"
    return against_reference(at_k, at_of, reference, test)


@statistic("technique_lowest_on", **KEE)
def technique_lowest_on(inside: Labelled, outside: Labelled, technique: str, metric: str) -> dict | None:
    """A technique's `metric` (a proportion in its block) on the claim's models against every other
    model: the highest over the claim's models − the lowest over the others, the pair that decides
    "lowest on these models" (below 0 only if every value of theirs lies below every other);
    Newcombe, two-sided Fisher exact (different models: different items). None without a model on
    each side."""

    def values(found):
        return [(label, b) for label, run in found if (b := proportion_at(_per_technique(run).get(technique, {}), metric))]

    ours, theirs = values(inside), values(outside)
    if not ours or not theirs:
        return None
    (high, a), (low, b) = max(ours, key=lambda f: f[1]["k"] / f[1]["n"]), min(theirs, key=lambda f: f[1]["k"] / f[1]["n"])
    return {
        "estimate": difference_unpaired(a["k"], a["n"], b["k"], b["n"]),
        "p_value": fisher_exact_p(a["k"], a["n"], b["k"], b["n"]),
        "test": f"{technique} {metric}: {high} (highest of {len(ours)} in scope) − {low} (lowest of {len(theirs)} others), "
        "two-sided Fisher exact",
    }


def _technique_correct(run: Run, technique: str) -> dict[str, bool]:
    return {
        str(r["item_id"]): bool(r["correct"])
        for r in read_items(run.path)
        if r.get("technique") == technique and r.get("correct") is not None
    }


@statistic("technique_setting_difference", **KEE)
def technique_setting_difference(runs: Sequence[Run], technique: str, param: str, first: int | str, second: int) -> dict | None:
    """KEE accuracy of `technique` in the run whose resolved `param` is `first` − in the run where it
    is `second`, on the items both answered. `first` "largest": the largest value above `second`
    among the runs (MAPLE-28: more heads masked than 20)."""
    by_value: dict = {}
    for run in runs:
        value = ((run.metrics.get("technique_params") or {}).get(technique) or {}).get(param)
        if value is not None and technique in (run.metrics.get("per_technique") or {}):
            by_value.setdefault(value, run)
    if first == "largest":
        first = max((v for v in by_value if v > second), default="")  # "": none above, so no data
    if first not in by_value or second not in by_value:
        return None
    tested = paired_test(*(_technique_correct(by_value[v], technique) for v in (first, second)))
    if tested is None:
        return None
    estimate, p_value = tested
    return {
        "estimate": estimate,
        "p_value": p_value,
        "test": f"{technique} accuracy at {param} = {first} − at {second}, exact McNemar",
    }
