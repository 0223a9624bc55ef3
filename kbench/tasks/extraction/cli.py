"""`kbench evaluate extraction`: which facts of a dataset does a model know?"""

from __future__ import annotations

from kbench.cli.common import evaluate_command


@evaluate_command("extraction")
def extraction(values: dict) -> dict:
    """Probe a model on a dataset split; rerunning the same command resumes where it stopped."""
    return values
