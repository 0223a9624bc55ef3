"""`kbench evaluate extraction`: which facts of a dataset does a model know?"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.common import evaluate_command


@evaluate_command("extraction")
def extraction(
    prompt: str = typer.Option("cloze", "--prompt", help="cloze | question | chat"),
    fewshot: int = typer.Option(0, "--fewshot", help="Solved examples from the train split before each item."),
    protocol: str = typer.Option(
        "maple", "--protocol", help="maple (generate + match; first_token_p1 beside it) | lama (strict single-token LAMA P@1)."
    ),
    common_vocab: Optional[Path] = typer.Option(
        None, "--common-vocab", help="lama protocol: restrict objects and ranks to this word list."
    ),
    case_sensitive: bool = typer.Option(False, "--case-sensitive", help="MAPLE matching keeps case."),
    max_new_tokens: int = typer.Option(16, "--max-new-tokens"),
    stop: Optional[list[str]] = typer.Option(
        None,
        "--stop",
        help="A stop string (repeatable); default: the prompt form's (cloze: newline, '. ', ','; question/chat: newline).",
    ),
) -> dict:
    """Probe a model on a dataset split; rerunning the same command resumes where it stopped."""
    return {
        "prompt": prompt,
        "fewshot": fewshot,
        "protocol": protocol,
        "common_vocab": str(common_vocab) if common_vocab else None,
        "case_sensitive": case_sensitive,
        "max_new_tokens": max_new_tokens,
        "stop": tuple(stop) if stop else None,
    }
