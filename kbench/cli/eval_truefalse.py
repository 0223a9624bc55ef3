"""`kbench evaluate truefalse`: LEFT's textbook true/false statements (prior, open book, closed book)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.common import TaskCall, evaluate_command


@evaluate_command("truefalse")
def truefalse(
    setting: str = typer.Option("prior", "--setting", help="prior | closed-book | open-book"),
    retriever: Optional[str] = typer.Option(
        None, "--retriever", help="open-book: gold (section paragraph) | sbert (MiniLM top-1)."
    ),
    checkpoint: Optional[Path] = typer.Option(
        None, "--checkpoint", help="closed-book: the folder written by `kbench read` (--model is then the model before reading)."
    ),
    max_passage_words: int = typer.Option(150, "--max-passage-words", help="open-book: cut the paragraph to this many words."),
) -> TaskCall:
    """Judge statements true or false (--split dev: chapters 1-8, or test; --limit: the first N statements,
    whole pairs); rerunning the same command resumes where it stopped."""
    from kbench.errors import UserError

    if checkpoint is not None and not checkpoint.is_dir():
        raise UserError(f"--checkpoint {checkpoint}: not a folder (write one with `kbench read`)")
    values = {
        "setting": setting,
        "retriever": retriever,
        "max_passage_words": max_passage_words,
        "checkpoint": str(checkpoint) if checkpoint else None,
    }
    if checkpoint is None:
        return TaskCall(values)
    # closed book: the checkpoint is judged, --model (None: the shared --model) is the model before reading
    return TaskCall(values, model=str(checkpoint), extra_models={"base": None})
