"""claims.md and the terminal table of tested claims: each claim's id, quote, what it compares,
the verdict per model (difference, 95% interval, n, p, Holm p) and across models."""

from __future__ import annotations

from kbench.claims.sets import ClaimSet
from kbench.claims.verdicts import ALPHA, MIN_MODELS, ClaimResult
from kbench.metrics.uncertainty import format_estimate


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def summary(tested: list[tuple[ClaimSet, list[ClaimResult]]]) -> list[str]:
    """One line per claim set: its claims tested and not, and the per-model verdicts by kind."""
    lines = []
    for chosen, results in tested:
        verdicts = [t.verdict for r in results for t in r.cells]
        counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("supported", "contradicted", "inconclusive"))
        measured = len({r.claim.id for r in results if r.claim.measurable})
        lines.append(
            f"- `{chosen.name}`: {len({r.claim.id for r in results})} claims, {measured} tested by kbench; "
            f"{len(verdicts)} verdicts per model and dataset: {counts}"
        )
    return lines


def markdown(suite_name: str, tested: list[tuple[ClaimSet, list[ClaimResult]]], provenance: list[str] = ()) -> str:
    lines = [
        f"# Claims tested on suite {suite_name}",
        "",
        f"Verdicts at alpha = {ALPHA}: supported, contradicted or inconclusive. Directional claims: Holm across the "
        "tests of each claim set. Equivalence claims: the 95% interval against the set's declared margin. Across "
        f"models: an exact one-sided sign test, which needs at least {MIN_MODELS} models.",
        "",
        *summary(tested),
        "",
        *provenance,
    ]
    for chosen, results in tested:
        lines += [f"## Claim set `{chosen.name}`: {chosen.paper}", ""]
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
            if claim.margin is not None:
                lines.append(f"Equivalence margin (declared by kbench; the paper states none): ±{claim.margin}.")
            lines += [
                "",
                "| model | task / dataset | difference [95% CI] | n | p | p Holm | verdict | test |",
                "|---|---|---:|---:|---:|---:|---|---|",
            ]
            for t in outcome.cells:
                estimate = t.result["estimate"]
                lines.append(
                    f"| {t.model} | {t.column} | {format_estimate(estimate)} | {estimate['n']} | "
                    f"{_p(t.result['p_value'])} | {_p(t.p_holm)} | {t.verdict} | {t.result['test'].replace('|', '/')} |"
                )
            lines.append("")
            lines += [f"Across models, {column}: {text}." for column, text in outcome.across.items()]
            if not outcome.cells:
                lines.append("No cell of the suite has the data this claim needs.")
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
            for column, text in outcome.across.items():
                table.add_row(outcome.claim.label, "(across models)", column, "", "", text)
    return table
