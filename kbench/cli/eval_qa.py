"""`kbench evaluate qa`: knowledge-update QA (EvolvingQA) -- Unchanged, New, Outdated, Updated."""

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


@evaluate_app.command()
def qa(
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
    metric: str = typer.Option(
        "official", "--metric", help="official (EvolvingQA scorer) | card (the evaluation card's variant)"
    ),
    prompt: str = typer.Option("question", "--prompt", help="question | chat (the tokenizer's chat template)"),
    fewshot: int = typer.Option(0, "--fewshot", help="Solved examples from the Unchanged items before each question."),
    max_new_tokens: int = typer.Option(16, "--max-new-tokens"),
) -> None:
    """Answer the questions greedily and score EM/F1 (x100) per slice; rerunning resumes where it stopped.
    --split: all (default) or one of unchanged, new, edited."""
    run_task(
        "qa",
        {
            "split": split,
            "config": config,
            "limit": limit,
            "seed": seed,
            "metric": metric,
            "prompt": prompt,
            "fewshot": fewshot,
            "max_new_tokens": max_new_tokens,
        },
        ModelOptions(model, batch_size, dtype, device, trust_remote_code, no_cache),
        dataset,
        out,
    )
