"""`kbench evaluate truefalse`: LEFT's textbook true/false statements (prior, open book, closed book)."""

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
def truefalse(
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
    setting: str = typer.Option("prior", "--setting", help="prior | closed-book | open-book"),
    retriever: Optional[str] = typer.Option(
        None, "--retriever", help="open-book: gold (section paragraph) | sbert (MiniLM top-1)."
    ),
    checkpoint: Optional[Path] = typer.Option(
        None, "--checkpoint", help="closed-book: the folder written by `kbench read` (--model is then the model before reading)."
    ),
    max_passage_words: int = typer.Option(150, "--max-passage-words", help="open-book: cut the paragraph to this many words."),
) -> None:
    """Judge statements true or false (--split dev: chapters 1-8, or test; --limit: the first N statements,
    whole pairs); rerunning the same command resumes where it stopped."""
    from kbench.errors import UserError

    if checkpoint is not None and not checkpoint.is_dir():
        raise UserError(f"--checkpoint {checkpoint}: not a folder (write one with `kbench read`)")
    values = {
        "split": split,
        "config": config,
        "limit": limit,
        "seed": seed,
        "setting": setting,
        "retriever": retriever,
        "max_passage_words": max_passage_words,
        "checkpoint": str(checkpoint) if checkpoint else None,
    }
    judged = str(checkpoint) if checkpoint is not None else model
    run_task(
        "truefalse",
        values,
        ModelOptions(judged, batch_size, dtype, device, trust_remote_code, no_cache),
        dataset,
        out,
        extra_models={"base": model} if checkpoint is not None else None,
    )
