"""`kbench check --model M [--against M2 ...] [--dataset DIR] [--limit 50] [--out DIR]`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app


@app.command()
def check(
    model: str = typer.Option(..., "--model", help="The model to check, as `kbench evaluate --model` names it."),
    against: list[str] = typer.Option([], "--against", help="Another model spec to compare item by item (repeatable)."),
    dataset: Optional[Path] = typer.Option(
        None, "--dataset", help="A built question dataset whose test split is the probe (default: LAMA T-REx facts)."
    ),
    limit: int = typer.Option(50, "--limit", help="Probe items (a seeded sample)."),
    seed: int = typer.Option(0, "--seed", help="The seed of the probe's sample."),
    out: Path = typer.Option(Path("check"), "--out", help="The folder check.json goes to."),
    threshold: list[str] = typer.Option(
        [], "--threshold", help="KEY=VALUE (repeatable): logprob_tolerance, agreement_tolerance, flip_fail, argmax_fail."
    ),
    dtype: str = typer.Option("float32", "--dtype", help="The dtype of an in-process model."),
    device: str = typer.Option("cpu", "--device", help="The device of an in-process (transformers) model."),
) -> None:
    """Check a backend before trusting its numbers: capabilities proved by requests, self-consistency,
    determinism, agreement with other backends and the chat template's effect. Prints one line per
    check, writes check.json; exits 1 when a check fails (docs/checks.md)."""
    from kbench.check.checks import Thresholds
    from kbench.check.run import print_table, run_checks, write_report

    limits = Thresholds.parse(threshold)
    report = run_checks(
        model, against=against, dataset=dataset, limit=limit, seed=seed, thresholds=limits, dtype=dtype, device=device
    )
    print_table(report)
    typer.echo(f"check: {write_report(report, out)}")
    if report["failed"]:
        sys.exit(1)
