"""`kbench claims list` and `kbench claims SUITE_DIR [--set NAME ...] [--out FILE]`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app
from kbench.errors import UserError


@app.command()
def claims(
    target: str = typer.Argument(..., help="`list` (the packaged claim sets), or a suite folder (it holds suite.json)."),
    sets: list[str] = typer.Option(
        [], "--set", help="A claim set to test (repeatable; default: every set the suite's tasks allow)."
    ),
    out: Optional[Path] = typer.Option(None, "--out", help="Where claims.md goes (default: SUITE_DIR/claims.md)."),
    check: Optional[Path] = typer.Option(
        None, "--check", help="A claims.md to compare with: exit 0 when this suite reproduces its numbers exactly, else 1."
    ),
) -> None:
    """Test the papers' claims on a suite's cells: per model and across models, with verdicts
    supported / contradicted / inconclusive at alpha 0.05; prints the table and writes claims.md.
    To test a suite folder literally named `list`, write it as `./list`."""
    from rich.console import Console

    from kbench.claims.sets import claim_sets

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
    text = markdown(document["suite"]["suite"]["name"], tested, provenance(document))
    if expected is not None:
        differences = compare(expected, parse_claims(text))
        for line in differences:
            typer.echo(line)
        typer.echo(f"{check}: {'reproduced exactly' if not differences else f'{len(differences)} numbers differ'}", err=True)
        if differences:
            sys.exit(1)
        return
    destination = out if out is not None else folder / "claims.md"
    write_text(destination, text)
    Console().print(terminal_table(tested))
    typer.echo(f"claims written to {destination}", err=True)
