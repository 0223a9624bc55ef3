"""`kbench evaluate kee`: knowledge-elicitation techniques vs the greedy baseline (MAPLE)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.common import BATCH_SIZE, CONFIG, DATASET, DEVICE, DTYPE, MODEL, TRUST_REMOTE_CODE, default_run_dir, open_runner
from kbench.cli.main import evaluate_app

ALL_TECHNIQUES = "baseline,temp0.7,temp1.2,recite,genread,caa,iti,decore,activation_decoding"


@evaluate_app.command()
def kee(
    dataset: Path = DATASET,
    model: str = MODEL,
    techniques: str = typer.Option(ALL_TECHNIQUES, "--techniques", help="Comma-separated; the baseline always runs."),
    k: int = typer.Option(20, "--k", help="Seed-A samples that split base failures into shallow / deep."),
    sweep_max: int = typer.Option(30, "--sweep-max", help="Ranking stability is checked at K = 1..this."),
    split: str = typer.Option("test", "--split"),
    config: Optional[str] = CONFIG,
    limit: Optional[int] = typer.Option(None, "--limit", help="Evaluate a seeded sample of N items."),
    seed: int = typer.Option(0, "--seed", help="Seeds the --limit sample and the fitting-pool sample."),
    recite_runs: int = typer.Option(20, "--recite-runs", help="RECITE recite-and-answer runs (majority vote)."),
    prompt: str = typer.Option("auto", "--prompt", help="auto (the chat template when the model has one) | chat | question."),
    case_sensitive: bool = typer.Option(False, "--case-sensitive", help="MAPLE matching keeps case."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default: runs/kee-<settings hash>)."),
    batch_size: Optional[int] = BATCH_SIZE,
    dtype: str = DTYPE,
    device: str = DEVICE,
    trust_remote_code: bool = TRUST_REMOTE_CODE,
) -> None:
    """Compare elicitation techniques with the baseline; rerunning the same command resumes."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kbench.errors import UserError
    from kbench.evaluate.kee import KeeSettings, parse_techniques, run_kee

    if recite_runs < 1:
        raise UserError(f"--recite-runs must be >= 1, got {recite_runs}")
    settings = KeeSettings(techniques=parse_techniques(techniques), split=split, config=config, limit=limit, seed=seed,
                           k=k, sweep_max=sweep_max, recite_runs=recite_runs, case_sensitive=case_sensitive,
                           prompt=prompt)
    run_dir = out or default_run_dir("kee", dataset.resolve(), model, dtype, repr(settings))
    console = Console(stderr=True)
    loaded, runner = open_runner(model, dtype=dtype, device=device, trust_remote_code=trust_remote_code, batch_size=batch_size)
    with Progress(TextColumn("kee {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as bar:
        task = bar.add_task("stages", total=None)

        def advance(stage: str, done: int, total: int) -> None:
            bar.update(task, description=f"finished {stage}", completed=done, total=total)

        run_kee(loaded, runner, dataset, run_dir, settings, progress=advance)
    Console().print((run_dir / "comparison.md").read_text(encoding="utf-8").split("\n## ")[1].split("\n", 1)[1])
    console.print(f"results: {run_dir / 'results.json'}; table: {run_dir / 'comparison.md'}; "
                  f"charts: {run_dir / 'prs.png'}, {run_dir / 'gain_loss.png'}")
