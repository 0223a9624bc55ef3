"""`kbench suite run SUITE.toml` and `kbench suite status DIR`: many models x tasks x datasets as one resumable grid."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app
from kbench.errors import UserError

suite_app = typer.Typer(help="Run many models x tasks x datasets as one resumable grid (a suite file).", no_args_is_help=True)
app.add_typer(suite_app, name="suite")


@suite_app.command("run")
def run(
    suite_file: Path = typer.Argument(
        ...,
        help="The suite file (TOML: [suite], [[models]], [[datasets]], [[tasks]]) or a packaged suite's name (suite list).",
    ),
    out: Optional[Path] = typer.Option(None, "--out", help="The suite folder (default: runs/suite-<suite name>)."),
    executor: str = typer.Option("local", "--executor", help="local (this process) or ray (each cell a Ray task)."),
    ray_address: Optional[str] = typer.Option(
        None, "--ray-address", help="With --executor ray: HOST:PORT of a running cluster (default: a local Ray of our own)."
    ),
    limit: Optional[int] = typer.Option(None, "--limit", help="At most N items per cell (a seeded sample, as --limit does)."),
) -> None:
    """Run every cell (model, task, dataset) of a suite; rerun the same command to resume. Finished
    cells are skipped, a failing cell is retried, then marked failed while the others go on (exit code 1)."""
    from kbench.suite.run import run_suite
    from kbench.suite.spec import load_suite
    from kbench.suite.status import print_status

    if executor not in ("local", "ray"):
        raise UserError(f"--executor {executor}: choose local or ray")
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be at least 1 (got {limit})")
    suite = load_suite(suite_file)  # every error before anything runs
    folder = out if out is not None else Path("runs") / f"suite-{suite.spec.suite.name}"
    state = run_suite(suite, folder, executor=executor, ray_address=ray_address, limit=limit)
    print_status(folder)
    if suite.spec.suite.claims:
        write_claims(folder, list(suite.spec.suite.claims))
    typer.echo(f"suite folder: {folder}", err=True)
    if state.failed():
        typer.echo(f"{len(state.failed())} of {len(suite.cells)} cells failed; rerun the command to retry them", err=True)
        sys.exit(1)  # not typer.Exit: under standalone_mode=False click returns its code instead of exiting


@suite_app.command("status")
def status(folder: Path = typer.Argument(..., help="A suite folder (it holds suite.json).")) -> None:
    """Print the grid: each finished cell's first headline metric, failed and pending cells."""
    from kbench.suite.status import print_status

    print_status(folder)


def write_claims(folder: Path, sets: list[str]) -> None:
    """claims.md of the suite's claim sets, as `kbench claims DIR --set ...` writes it."""
    from kbench.claims.check import provenance
    from kbench.claims.render import markdown
    from kbench.claims.verdicts import test_suite
    from kbench.io import write_text
    from kbench.suite.status import read_suite_json

    document, destination = read_suite_json(folder), folder / "claims.md"
    found = provenance(document, folder, destination, sets)
    write_text(destination, markdown(document["suite"]["suite"]["name"], test_suite(folder, sets), found))
    typer.echo(f"claims written to {folder / 'claims.md'}", err=True)


@suite_app.command("list")
def list_suites() -> None:
    """The packaged suites: each claim set at a CPU size and at the papers' size."""
    from kbench.suite.spec import load_suite, packaged_suites

    for name, path in sorted(packaged_suites().items()):
        spec = load_suite(path).spec
        models = ", ".join(m.label for m in spec.models)
        tasks = ", ".join(t.label for t in spec.tasks)
        typer.echo(f"{name}: claims {', '.join(spec.suite.claims) or '-'}; models {models}; tasks {tasks}")
