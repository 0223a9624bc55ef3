"""`kbench evaluate kee`: knowledge-elicitation techniques vs the greedy baseline (MAPLE)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.common import (
    BATCH_SIZE,
    CONFIG,
    DATASET,
    DEVICE,
    DTYPE,
    LIMIT,
    MODEL,
    NO_CACHE,
    OUT,
    SEED,
    SPLIT,
    TRUST_REMOTE_CODE,
    ModelOptions,
    run_task,
)
from kbench.cli.main import evaluate_app

ALL_TECHNIQUES = "baseline,temp0.7,temp1.2,recite,genread,caa,iti,decore,activation_decoding"


@evaluate_app.command()
def kee(
    dataset: Path = DATASET,
    model: str = MODEL,
    split: Optional[str] = SPLIT,
    config: Optional[str] = CONFIG,
    limit: Optional[int] = LIMIT,
    seed: int = SEED,
    out: Optional[Path] = OUT,
    batch_size: Optional[int] = BATCH_SIZE,
    dtype: str = DTYPE,
    device: str = DEVICE,
    trust_remote_code: bool = TRUST_REMOTE_CODE,
    no_cache: bool = NO_CACHE,
    techniques: str = typer.Option(ALL_TECHNIQUES, "--techniques", help="Comma-separated; the baseline always runs."),
    k: int = typer.Option(20, "--k", help="Seed-A samples that split base failures into shallow / deep."),
    sweep_max: int = typer.Option(30, "--sweep-max", help="Ranking stability is checked at K = 1..this."),
    recite_runs: int = typer.Option(20, "--recite-runs", help="RECITE recite-and-answer runs (majority vote)."),
    technique_param: list[str] = typer.Option(
        [], "--technique-param", help="NAME.KEY=VALUE, repeatable: a technique setting, e.g. iti.heads=13."
    ),
    fit_pool_limit: int = typer.Option(3254, "--fit-pool-limit", help="Train/dev items that fit CAA and ITI (MAPLE: 3,254)."),
    top_k: Optional[int] = typer.Option(None, "--top-k", help="Sampling scheme (temperature baselines, partition): top-k."),
    top_p: float = typer.Option(1.0, "--top-p", help="Sampling scheme: nucleus mass (1.0: no truncation)."),
    prompt: str = typer.Option("auto", "--prompt", help="auto (the chat template when the model has one) | chat | question."),
    case_sensitive: bool = typer.Option(False, "--case-sensitive", help="MAPLE matching keeps case."),
) -> None:
    """Compare elicitation techniques with the baseline on paired items; rerunning the same command resumes."""
    from rich.console import Console

    from kbench.evaluate.techniques import parse_technique_params
    from kbench.report.kee import write_report

    names = tuple(n.strip() for n in techniques.split(",") if n.strip())
    values = {
        "split": split,
        "config": config,
        "limit": limit,
        "seed": seed,
        "techniques": names,
        "k": k,
        "sweep_max": sweep_max,
        "recite_runs": recite_runs,
        "prompt": prompt,
        "case_sensitive": case_sensitive,
        "fit_pool_limit": fit_pool_limit,
        "top_k": top_k,
        "top_p": top_p,
        "technique_params": parse_technique_params(technique_param),
    }
    results, run_dir = run_task(
        "kee", values, ModelOptions(model, batch_size, dtype, device, trust_remote_code, no_cache), dataset, out
    )
    if results is not None:
        write_report(results, run_dir)
        Console(stderr=True).print(
            f"table: {run_dir / 'comparison.md'}; charts: {run_dir / 'prs.png'}, {run_dir / 'gain_loss.png'}"
        )
