"""`kbench version [--verbose]`: what to paste into a bug report (`kbench --version` is main's eager option)."""

from __future__ import annotations

import typer

from kbench.cli.main import app
from kbench.cli.versions import environment_lines, version_line


@app.command()
def version(
    verbose: bool = typer.Option(False, "--verbose", help="Also the versions of torch, transformers, vLLM, Python and the OS."),
) -> None:
    """Print kbench's version (and commit, from a checkout); with --verbose, the environment for a bug report."""
    typer.echo(version_line())
    if verbose:
        for line in environment_lines():
            typer.echo(line)
