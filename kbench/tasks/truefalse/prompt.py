"""LEFT's true/false prompt: the truefalse task asks it, and LEFT's BoolQ prior is fine-tuned on it
(`kbench.models.training.boolq.finetune_boolq(..., prompt=truefalse_prompt)`), so the fine-tune
learns the very form the task then reads."""

from __future__ import annotations


def truefalse_prompt(statement: str, passage: str | None, max_words: int) -> str:
    """LEFT's true/false prompt; the passage (open book) is cut to `max_words` words."""
    head = ""
    if passage:
        words = passage.split()
        head = "Passage: " + " ".join(words[:max_words]) + (" ..." if len(words) > max_words else "") + "\n"
    return f"{head}Statement: {statement}\nIs this statement true or false?\nAnswer:"
