"""`kbench evaluate truefalse`: LEFT's textbook true/false statements (prior, open book, closed book)."""

from __future__ import annotations

from kbench.cli.common import evaluate_command


@evaluate_command("truefalse")
def truefalse(values: dict) -> dict:
    """Judge statements true or false (--split dev: chapters 1-8, or test; --limit: the first N statements,
    whole pairs); closed book judges --checkpoint, --model is the model before reading; rerunning the same
    command resumes where it stopped."""
    return values
