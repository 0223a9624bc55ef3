"""The plan of `kbench claims plan` as Markdown (`--out plan.md`) and as the terminal's table."""

from __future__ import annotations

from kbench.claims.plan_sizes import TARGET
from kbench.claims.power import sign_test_models

_COLUMNS = (
    "claim",
    "claimed",
    "task / dataset",
    "models",
    "n per cell",
    "smallest detectable (80% power)",
    "paper's effect",
    "limit needed",
)


def _cells(row: dict) -> list[str]:
    limit = "" if row["limit_needed"] is None else str(row["limit_needed"])
    models = ", ".join(row["models"]) or "none in scope"
    return [row["claim"], row["direction"], row["column"], models, row["n"], row["detectable"], row["paper"], limit]


def _preamble(found: dict) -> list[str]:
    assumed = ", ".join(f"{name} {value:.0%}" for name, value in found["assumed"].items())
    return [
        f"Before anything runs: what the suite's sizes can decide, at alpha {found['alpha']} and {found['power']:.0%} power "
        "(normal approximation, `kbench.claims.power`). A directional claim faces Holm over the claim set's directional "
        "tests: its smallest detectable difference is at Holm's first step, alpha / (the number of tests). An interval claim "
        "(equivalence, non-superiority) needs its 95% interval's half-width inside the declared margin. Where the paper "
        "prints an effect, the n that detects it (per group) and the limit that gives that n. `limit needed`: the facts, "
        "statements or questions a cell must evaluate for the paper's effect, for the margin, or, where the paper prints "
        f"no effect, for a difference of {TARGET:.0%} (kbench's planning target).",
        "",
        f"Assumed where n or the variance depends on what the model knows (no paper prints these for the suite's models): "
        f"{assumed}. XTEVAL: acc_D 34% (OPT-125M, XTEVAL L179), and a downstream figure as a proportion over its "
        "test queries (the items' variance dominates the runs': XTEVAL L103 prints sigma <= 0.011 over 27 runs).",
        "",
        f"Across models: an exact one-sided sign test needs {sign_test_models(found['alpha'])} models in the claim's scope.",
    ]


def markdown(found: dict) -> str:
    lines = [f"# Claims plan for suite {found['suite']}", "", f"Written by `kbench claims plan {found['suite']}`.", ""]
    lines += [*_preamble(found), ""]
    for chosen in found["sets"]:
        lines += [f"## Claim set `{chosen['name']}`", "", f"Directional tests under Holm: {chosen['holm_tests']}.", ""]
        lines += ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
        lines += ["| " + " | ".join(c.replace("|", "/") for c in _cells(row)) + " |" for row in chosen["rows"]]
        lines += ["", "Across models:", ""]
        lines += [
            f"- {a['claim']}: {a['models']} model{'s' if a['models'] != 1 else ''} in scope, {a['needed']} needed"
            + (" (cannot decide across models)" if a["models"] < a["needed"] else "")
            for a in chosen["across"]
        ]
        lines.append("")
    return "\n".join(lines)


def terminal_table(found: dict):
    from rich.table import Table

    table = Table(title=f"claims plan: {found['suite']}")
    for column in _COLUMNS:
        table.add_column(column)
    for chosen in found["sets"]:
        for row in chosen["rows"]:
            table.add_row(*_cells(row))
        for a in chosen["across"]:
            table.add_row(a["claim"], "", "(across models)", f"{a['models']} of {a['needed']} needed", "", "", "", "")
    return table
