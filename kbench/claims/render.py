"""claims.md and the terminal table of tested claims: each claim's id, quote, what it compares,
the models it is about, the verdict per model (difference, 95% interval, n, p, Holm p; beside an
inconclusive verdict, the n it would need at the observed difference) and across models. Below a
cell's row, one row per reading of a rule the paper leaves open ("MODEL · reading NAME"), where the
cell's statistic reads it; after the tested rows, a row per model outside the claim's scope, or
without the setting it requires, with dashes and no verdict."""

from __future__ import annotations

from collections.abc import Sequence

from kbench.claims.power import n_to_decide
from kbench.claims.sets import SETTINGS, Claim, ClaimSet, scope_text
from kbench.claims.verdicts import ALPHA, DEPENDS, DIRECTIONAL, MIN_MODELS, NOT_MET, OUTSIDE, ClaimResult
from kbench.metrics.uncertainty import format_estimate


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _needed(claim: Claim, result: dict, verdict: str, alpha: float) -> str:
    """Beside an inconclusive verdict: the n (the n column's unit) that the observed difference
    would decide at; "—" for a decided verdict or one no n decides at this difference."""
    if verdict != "inconclusive":
        return "—"
    needed = n_to_decide(result["estimate"], claim.direction, claim.margin, alpha if result["p_value"] is not None else ALPHA)
    return "—" if needed is None else f"≈ {needed}"


def _row(model: str, column: str, result: dict, p_holm: float | None, verdict: str, needed: str) -> str:
    estimate = result["estimate"]
    return (
        f"| {model} | {column} | {format_estimate(estimate)} | {estimate['n']} | "
        f"{_p(result['p_value'])} | {_p(p_holm)} | {verdict} | {needed} | {result['test'].replace('|', '/')} |"
    )


def holm_tests(results: list[ClaimResult]) -> int:
    """The directional tests of a claim set that Holm adjusts together."""
    return sum(r.claim.direction in DIRECTIONAL and t.result["p_value"] is not None for r in results for t in r.cells)


def _no_cells(outcome: ClaimResult) -> str:
    requires = outcome.claim.requires
    if outcome.not_met and not outcome.outside and requires:  # a model is "not met" only where the claim requires
        return f"Verdict: {NOT_MET}: no model of the suite is {SETTINGS[requires][0]}."
    if outcome.outside and not outcome.not_met:
        return "No model of the suite is one the claim is about."
    return "No cell of the suite has the data this claim needs."


def summary(tested: list[tuple[ClaimSet, list[ClaimResult]]]) -> list[str]:
    """One line per claim set: its claims, those kbench encodes, those the suite's cells gave data,
    the per-model verdicts by kind, and the decided ones (supported or contradicted) counted per
    model and dataset and as distinct claims (a claim decided on several cells counts once)."""
    lines = []
    for chosen, results in tested:
        verdicts = [t.verdict for r in results for t in r.cells]
        counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("supported", "contradicted", "inconclusive"))
        encoded = len({r.claim.id for r in results if r.claim.measurable})
        with_data = len({r.claim.id for r in results if r.cells})
        decided = [r.claim.id for r in results for t in r.cells if t.verdict in ("supported", "contradicted")]
        claims = len(set(decided))
        lines.append(
            f"- `{chosen.name}`: {len({r.claim.id for r in results})} claims, {encoded} encoded for kbench to test, "
            f"{with_data} tested with data; {len(verdicts)} verdicts per model and dataset: {counts}; decided: "
            f"{len(decided)} of {len(verdicts)} verdicts, {claims} distinct claim{'s' if claims != 1 else ''}"
        )
    return lines


def markdown(suite_name: str, tested: list[tuple[ClaimSet, list[ClaimResult]]], provenance: Sequence[str] = ()) -> str:
    lines = [
        f"# Claims tested on suite {suite_name}",
        "",
        f"Verdicts at alpha = {ALPHA}: supported, contradicted or inconclusive. Directional claims: Holm across the "
        "tests of each claim set. Equivalence claims: the 95% interval against the set's declared margin. Across "
        f"models: an exact one-sided sign test, which needs at least {MIN_MODELS} models. Non-superiority claims "
        "(A no better than B): supported when the 95% interval of A − B lies below the declared margin, "
        "contradicted only when it lies above it. A model a claim is not about is listed as outside the "
        f"claim's scope, with no verdict; a model without the setting a claim requires as {NOT_MET}. "
        f"A verdict that differs between readings of a rule the paper leaves open reads {DEPENDS}, "
        "with each reading's row below it. n to decide: beside an inconclusive verdict, the n (in the n column's "
        "unit) at which the observed difference would decide, scaled from its interval (the standard error shrinks "
        "as 1/√n): 80% power at Holm's first step for a directional claim, the interval inside the margin for an "
        "interval claim; — where no n would (no interval, or an estimate beyond the margin).",
        "",
        *summary(tested),
        "",
        *provenance,
    ]
    for chosen, results in tested:
        lines += [f"## Claim set `{chosen.name}`: {chosen.paper}", ""]
        alpha = ALPHA / max(holm_tests(results), 1)  # Holm's first step: the bar the n to decide is sized for
        for outcome in results:
            claim = outcome.claim
            expected = claim.kind == "expectation" and not claim.statement.startswith("Design expectation")
            kind = " (a design expectation, not a result the paper reports)" if expected else ""
            lines += [f"### {claim.label}: {claim.statement}{kind}", "", f"> {claim.quote}", ""]
            lines += [f"Translation: {claim.translation}", ""] if claim.translation else []
            lines += [f"Source: {claim.source}."]
            if not claim.measurable:
                lines += ["", f"Verdict: {claim.unmeasurable}.", ""]
                continue
            lines += ["", f"Compared: {claim.compared.rstrip('.')}."]
            if claim.models or claim.except_models:
                lines.append(f"About: {scope_text(claim)} (the other models are outside the claim's scope).")
            if claim.requires:
                lines.append(f"Requires: {SETTINGS[claim.requires][0]}.")
            if claim.margin is not None:
                kind, sign = ("Non-superiority", "+") if claim.direction == "not_greater" else ("Equivalence", "±")
                lines.append(f"{kind} margin (declared by kbench; the paper states none): {sign}{claim.margin}.")
            lines += [
                "",
                "| model | task / dataset | difference [95% CI] | n | p | p Holm | verdict | n to decide | test |",
                "|---|---|---:|---:|---:|---:|---|---:|---|",
            ]
            for t in outcome.cells:
                lines.append(_row(t.model, t.column, t.result, t.p_holm, t.verdict, _needed(claim, t.result, t.verdict, alpha)))
                for name, found in t.readings.items():
                    model, verdict = f"{t.model} · reading {name}", t.reading_verdicts[name]
                    needed = _needed(claim, found, verdict, alpha)
                    lines.append(_row(model, t.column, found, t.reading_holm.get(name), verdict, needed))
            for model, column in outcome.outside:
                if (model, column) in outcome.beyond:
                    found, verdict = outcome.beyond[(model, column)]
                    label = f"{OUTSIDE}; does it generalise? {verdict} (p unadjusted)"
                    lines.append(_row(model, column, found, None, label, "—"))
                else:
                    lines.append(f"| {model} | {column} | — | — | — | — | {OUTSIDE} | — | — |")
            lines += [f"| {model} | {column} | — | — | — | — | {NOT_MET} | — | — |" for model, column in outcome.not_met]
            lines.append("")
            read = sorted({name for t in outcome.cells for name in t.readings})
            if read:
                same = all(t.verdict != DEPENDS for t in outcome.cells)
                verdict = "the same under every reading" if same else f"{DEPENDS} where a row says so"
                lines.append(f"Readings of temperature sampling's recovery rule ({', '.join(read)}): the verdict is {verdict}.")
            lines += [f"Across models, {column}: {text}." for column, text in outcome.across.items()]
            if not outcome.cells:
                lines.append(_no_cells(outcome))
            lines += [f"Left out (no data for the statistic): {', '.join(outcome.skipped)}."] if outcome.skipped else []
            lines.append("")
    return "\n".join(lines)


def terminal_table(tested: list[tuple[ClaimSet, list[ClaimResult]]]):
    from rich.table import Table

    table = Table(title="claims")
    for column in ("claim", "model", "task / dataset", "difference [95% CI]", "p Holm", "verdict"):
        table.add_column(column)
    for _, results in tested:
        for outcome in results:
            for t in outcome.cells:
                table.add_row(
                    outcome.claim.label, t.model, t.column, format_estimate(t.result["estimate"]), _p(t.p_holm), t.verdict
                )
                for name, found in t.readings.items():
                    estimate, p_holm = format_estimate(found["estimate"]), _p(t.reading_holm.get(name))
                    model = f"{t.model} · reading {name}"
                    table.add_row(outcome.claim.label, model, t.column, estimate, p_holm, t.reading_verdicts[name])
            for model, column in outcome.outside:
                there, verdict = outcome.beyond.get((model, column)) or (None, None)
                estimate = format_estimate(there["estimate"]) if there else ""
                label = f"{OUTSIDE}; does it generalise? {verdict} (p unadjusted)" if there else OUTSIDE
                table.add_row(outcome.claim.label, model, column, estimate, "", label)
            for model, column in outcome.not_met:
                table.add_row(outcome.claim.label, model, column, "", "", NOT_MET)
            for column, text in outcome.across.items():
                table.add_row(outcome.claim.label, "(across models)", column, "", "", text)
    return table
