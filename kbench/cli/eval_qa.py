"""`kbench evaluate qa`: knowledge-update QA (EvolvingQA) -- Unchanged, New, Outdated, Updated."""

from __future__ import annotations

import typer

from kbench.cli.common import evaluate_command


@evaluate_command("qa")
def qa(
    metric: str = typer.Option(
        "official", "--metric", help="official (EvolvingQA scorer) | card (the evaluation card's variant)"
    ),
    prompt: str = typer.Option("question", "--prompt", help="question | chat (the tokenizer's chat template)"),
    fewshot: int = typer.Option(0, "--fewshot", help="Solved examples from the Unchanged items before each question."),
    max_new_tokens: int = typer.Option(16, "--max-new-tokens"),
) -> dict:
    """Answer the questions greedily and score EM/F1 (x100) per slice; rerunning resumes where it stopped.
    --split: all (default) or one of unchanged, new, edited."""
    return {"metric": metric, "prompt": prompt, "fewshot": fewshot, "max_new_tokens": max_new_tokens}
