"""`kbench evaluate choice`: its options are generated from `ChoiceSettings`."""

from __future__ import annotations

from kbench.cli.common import evaluate_command


@evaluate_command("choice", comma=("top_k",))
def choice(values: dict) -> dict:
    """Rank every candidate of each relation's answer space by the log-likelihood of its statement
    (lm-pub-quiz's BEAR probe); --answer-space FILE gives the candidates, else each relation's objects
    in the split; --top-k 5,10 adds P@k; rerunning the same command resumes where it stopped."""
    return values
