"""`kbench evaluate truefalse`: LEFT's textbook true/false statements (prior, open book, closed book)."""

from __future__ import annotations

from pathlib import Path

from kbench.cli.common import TaskCall, evaluate_command


@evaluate_command("truefalse")
def truefalse(values: dict) -> TaskCall:
    """Judge statements true or false (--split dev: chapters 1-8, or test; --limit: the first N statements,
    whole pairs); rerunning the same command resumes where it stopped."""
    from kbench.errors import UserError

    checkpoint = values.get("checkpoint")
    if checkpoint is None:
        return TaskCall(values)
    if not Path(checkpoint).is_dir():
        raise UserError(f"--checkpoint {checkpoint}: not a folder (write one with `kbench read`)")
    # closed book: the checkpoint is judged, --model (None: the shared --model) is the model before reading
    return TaskCall(values, model=checkpoint, extra_models={"base": None})
