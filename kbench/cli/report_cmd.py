"""`kbench report RUN_DIR... --out DIR` and `kbench report standardize RUN_DIR... --out DIR`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app
from kbench.errors import UserError


@app.command()
def report(
    run_dirs: list[Path] = typer.Argument(
        ...,
        help="Evaluation run directories (each holds results.json), or one suite folder (suite.json). "
        "With `standardize` first: KoLA standardised scores across the runs.",
    ),
    out: Path = typer.Option(Path("report"), "--out", help="Output folder (index.html, item explorers, PNG charts)."),
    relations: Optional[Path] = typer.Option(
        None,
        "--relations",
        help="JSONL of {relation, label} (e.g. LAMA's relations.jsonl): labels for runs whose items and dataset carry none.",
    ),
) -> None:
    """Write a static HTML report: summary with 95% intervals, models compared on their shared items
    (paired McNemar), an item explorer per run, PNG charts. `kbench report standardize ...` writes
    KoLA standardised scores (one headline metric per task).

    To report a run folder literally named `standardize`, write it as `./standardize`.
    """
    if run_dirs and str(run_dirs[0]) == "standardize":
        if len(run_dirs) < 2:
            raise typer.BadParameter("give the run directories after `standardize`")
        # Imported lazily: the standardisation library is its own module (kbench.report.standardize).
        try:
            from kbench.report.standardize import standardize_runs
        except ImportError as exc:
            raise UserError(
                f"`kbench report standardize` needs kbench.report.standardize, which this installation lacks ({exc})"
            ) from exc

        standardize_runs(list(run_dirs[1:]), out)
        typer.echo(f"standardised scores written to {out}")
        return
    if len(run_dirs) == 1 and (run_dirs[0] / "suite.json").is_file():  # a suite folder has a page of its own
        from kbench.suite.report import build_suite_report

        typer.echo(f"report written to {build_suite_report(run_dirs[0], out)}")
        return
    # on the terminal too: each run's protocol and each comparison that is not like for like
    from kbench.api import report

    index = report(list(run_dirs), out=out, relations=relations, echo=typer.echo)
    typer.echo(f"report written to {index}")
