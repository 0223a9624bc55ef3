"""What "the model predicts the tail at top-1" means for a run: XTEVAL's D^theta criterion.

    first-token        causal LM: the tail's first token is the argmax (the default)
    full-answer        causal LM with --top1 full-answer: every token of the tail is the argmax, teacher-forced
    single-token-mask  masked LM: the single-token tail is the argmax at the one mask; multi-token
                       tails cannot be read and leave D (the denominator of acc_D)
    known-facts-file   D^theta given by --known-facts

Runs with different criteria measure acc_D (and draw their test splits) differently; a comparison
says so and offers `--top1 full-answer` as the common ground (a causal LM that must write the
whole tail is the closest to a masked LM that must fill the whole, single-token tail).
"""

from __future__ import annotations

MULTI_TOKEN = {
    "first-token": "counted (only the first token is checked)",
    "full-answer": "counted (every token is checked)",
    "single-token-mask": "leave D (a masked LM reads the tail at one mask)",
    "known-facts-file": "as the file says",
}


def d_theta_criterion(model_kind: str, top1: str, known_facts: str | None = None) -> dict:
    """{"criterion", "model_kind", "multi_token_tails"}: recorded in results.json `metrics.extraction.top1`."""
    if known_facts:
        criterion = "known-facts-file"
    elif model_kind == "masked":
        criterion = "single-token-mask"
    else:
        criterion = top1
    return {"criterion": criterion, "model_kind": model_kind, "multi_token_tails": MULTI_TOKEN[criterion]}


def run_criterion(results: dict) -> dict:
    """The criterion a results envelope records, or (runs written before it was recorded) the one
    its model kind and settings imply."""
    recorded = (results.get("metrics") or {}).get("extraction", {}).get("top1")
    if isinstance(recorded, dict) and recorded.get("criterion"):
        return recorded
    settings = results.get("settings") or {}
    kind = str((results.get("model") or {}).get("kind") or "causal")
    return d_theta_criterion(kind, str(settings.get("top1") or "first-token"), settings.get("known_facts"))
