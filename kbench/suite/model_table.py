"""One row of the suite's model table, read from an opened model: what a scaling chart and a
reader of the leaderboard need to know about each model.

    {"model": "smollm2-135m", "backend": "hf", "identity": "...", "parameters": 134515008,
     "parameters_from": "weights", "family": "llama", "dtype": "float32", "chat_template": true,
     "instruction_tuned": null, "context_length": 8192, "revision": null, "sha256": "b179...",
     "training_tokens": 2e12, "release_date": "2024-11-01"}

Parameters are counted from the loaded weights (tied embeddings once); a served model's weights
are out of reach, so its count comes from `[models.meta] parameters` or stays null. Whether a model is
instruction-tuned is no property of its files: the table records whether its tokenizer has a chat
template, and `instruction_tuned` only when `[models.meta]` says so.
"""

from __future__ import annotations

from typing import Any

from kbench.io import stable_hash
from kbench.suite.spec import ModelEntry


def model_row(entry: ModelEntry, opened: Any) -> dict[str, Any]:
    described = opened.describe()
    weights = described.get("weights") or {}
    loaded = _loaded(opened)
    config = getattr(loaded.model, "config", None) if loaded is not None else None
    counted = _count_parameters(loaded.model) if loaded is not None else None
    meta = entry.meta
    return {
        "model": entry.model,
        "backend": opened.backend,
        "identity": described.get("identity"),
        "kind": described.get("kind"),
        "parameters": counted if counted is not None else meta.parameters,
        "parameters_from": "weights" if counted is not None else ("meta" if meta.parameters else None),
        "family": meta.family or getattr(config, "model_type", None),
        "dtype": described.get("dtype"),
        "chat_template": bool(getattr(opened.tokenizer, "chat_template", None)),
        "instruction_tuned": meta.instruction_tuned,
        "context_length": _context_length(config),
        "revision": weights.get("revision") or None,
        "sha256": weights.get("sha256") or _files_hash(weights.get("files_sha256")),
        "training_tokens": meta.training_tokens,
        "release_date": meta.release_date.isoformat() if meta.release_date else None,
    }


def unavailable_row(entry: ModelEntry, error: str) -> dict[str, Any]:
    """The row of a model that could not be opened: what the suite file says, and why."""
    return {"model": entry.model, "error": error, **entry.meta.model_dump(mode="json")}


def _loaded(opened: Any):
    """The transformers weights behind a local model (None for a served one)."""
    inner = getattr(opened, "inner", opened)
    training_weights = getattr(inner, "training_weights", None)
    return training_weights() if callable(training_weights) else None


def _count_parameters(network: Any) -> int | None:
    if network is None or not hasattr(network, "parameters"):
        return None
    seen, total = set(), 0
    for tensor in network.parameters():  # parameters() yields a tied tensor once; the set guards other sharing
        if id(tensor) not in seen:
            seen.add(id(tensor))
            total += tensor.numel()
    return total


def _context_length(config: Any) -> int | None:
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    text_config = getattr(config, "text_config", None)
    return _context_length(text_config) if text_config is not None else None


def _files_hash(files: dict[str, str] | None) -> str | None:
    """One sha256 for a folder of weight files: the hash of their names and hashes."""
    return stable_hash(sorted(files.items())) if files else None
