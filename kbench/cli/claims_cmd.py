"""`kbench claims list`, `kbench claims plan SUITE.toml [--out plan.md] [--json]` and
`kbench claims SUITE_DIR [--set NAME ...] [--out FILE]`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app
from kbench.errors import UserError


@app.command()
def claims(
    target: str = typer.Argument(
        ..., help="`list` (the packaged claim sets), `plan` (then a suite file), or a suite folder (it holds suite.json)."
    ),
    suite_file: Optional[str] = typer.Argument(
        None, metavar="[SUITE]", help="With `plan`: a suite file, or a packaged suite's name (`kbench suite list`)."
    ),
    sets: list[str] = typer.Option(
        [], "--set", help="A claim set to test (repeatable; default: every set the suite's tasks allow)."
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Where claims.md goes (default: SUITE_DIR/claims.md); with `plan`, where plan.md goes."
    ),
    as_json: bool = typer.Option(False, "--json", help="With `plan`: print the plan as JSON instead of the table."),
    check: Optional[Path] = typer.Option(
        None, "--check", help="A claims.md to compare with: exit 0 when this suite reproduces its numbers exactly, else 1."
    ),
) -> None:
    """Test the papers' claims on a suite's cells: per model and across models, with verdicts
    supported / contradicted / inconclusive at alpha 0.05; prints the table and writes claims.md.
    `plan SUITE` sizes a suite before it runs: per claim the n per cell, the smallest difference
    detectable at 80% power after Holm, the n the paper's printed effect needs, and the models a
    sign test across models needs. To test a suite folder literally named `list` or `plan`, write
    it as `./list`."""
    from rich.console import Console

    from kbench.claims.sets import claim_sets

    if target == "plan":
        if sets or check is not None:
            raise UserError("--set and --check go with `kbench claims SUITE_DIR`; the plan reads the suite's [suite] claims")
        _plan(suite_file, out, as_json)
        return
    if suite_file is not None or as_json:
        raise UserError("a second argument and --json go with `kbench claims plan SUITE` only")

    if target == "list":
        for chosen in claim_sets().values():
            typer.echo(
                f"{chosen.name}: {len(chosen.tested)} tested, {len(chosen.claims) - len(chosen.tested)} not measurable - "
                f"needs {', '.join(sorted(chosen.tasks))} cells - {chosen.paper}"
            )
            for c in chosen.claims:
                what = c.unmeasurable if not c.measurable else f"{c.task}: {c.compared}"
                note = " (expectation)" if c.kind == "expectation" else ""
                typer.echo(f"  {c.label}{note}: {c.statement} [{what}]")
        return
    from kbench.claims.check import compare, parse_claims, provenance
    from kbench.claims.render import markdown, terminal_table
    from kbench.claims.verdicts import test_suite
    from kbench.io import write_text
    from kbench.suite.status import read_suite_json

    folder = Path(target)
    document = read_suite_json(folder)
    expected = None
    if check is not None:
        if not check.is_file():
            raise UserError(f"--check {check}: no such file")
        expected = parse_claims(check.read_text(encoding="utf-8"), str(check))
    tested = test_suite(folder, list(sets))
    destination = out if out is not None else folder / "claims.md"
    text = markdown(document["suite"]["suite"]["name"], tested, provenance(document, folder, destination, list(sets)))
    if expected is not None:
        differences = compare(expected, parse_claims(text))
        for line in differences:
            typer.echo(line)
        typer.echo(f"{check}: {'reproduced exactly' if not differences else f'{len(differences)} numbers differ'}", err=True)
        if differences:
            sys.exit(1)
        return
    write_text(destination, text)
    Console().print(terminal_table(tested))
    typer.echo(f"claims written to {destination}", err=True)


def _plan(suite_file: str | None, out: Path | None, as_json: bool) -> None:
    import json

    from rich.console import Console

    from kbench.claims.plan import plan
    from kbench.claims.plan_render import markdown, terminal_table
    from kbench.io import write_text
    from kbench.suite.spec import load_suite

    if suite_file is None:
        raise UserError("kbench claims plan SUITE: give a suite file or a packaged suite's name")
    suite = load_suite(suite_file)
    if not suite.spec.suite.claims:
        raise UserError(f"{suite.path}: [suite] claims names no claim set to plan")
    found = plan(suite)
    if out is not None:
        write_text(out, markdown(found))
        typer.echo(f"plan written to {out}", err=True)
    if as_json:
        typer.echo(json.dumps(found, indent=1, ensure_ascii=False))
    else:
        Console(width=200).print(terminal_table(found))
