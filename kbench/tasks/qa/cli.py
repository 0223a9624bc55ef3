"""`kbench evaluate qa`: knowledge-update QA (EvolvingQA) -- Unchanged, New, Outdated, Updated."""

from __future__ import annotations

from kbench.cli.common import evaluate_command


@evaluate_command("qa")
def qa(values: dict) -> dict:
    """Answer the questions greedily and score EM/F1 (x100) per slice; rerunning resumes where it stopped.
    --split: all (default) or one of unchanged, new, edited."""
    return values
