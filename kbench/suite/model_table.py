"""One row of the suite's model table, read from an opened model: what a scaling chart and a
reader of the leaderboard need to know about each model.

    {"model": "smollm2-135m", "backend": "hf", "identity": "...", "parameters": 134515008,
     "parameters_from": "weights", "family": "llama", "dtype": "float32", "chat_template": true,
     "instruction_tuned": null, "context_length": 8192, "revision": null, "sha256": "b179...",
     "training_tokens": 2e12, "release_date": "2024-11-01"}

Parameters are counted from the loaded weights (tied embeddings once); a served model's weights
are out of reach, so its count comes from `[models.meta] parameters` or stays null. Whether a model is
instruction-tuned is no property of its files: the table records whether it takes chat prompts (its
tokenizer has a chat template, or its server applies one), and `instruction_tuned` only when
`[models.meta]` says so. Everything but `[models.meta]` and `read` is read off the model's
`ModelInfo`. `read`: a `kbench read` checkpoint's record (its base model, the text read, the
steps), None for any other model; claims that require continual pretraining read it
(`kbench.claims.sets.SETTINGS`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbench.suite.spec import ModelEntry


def model_row(entry: ModelEntry, opened: Any) -> dict[str, Any]:
    info = opened.info
    meta = entry.meta
    return {
        "model": entry.model,
        "backend": info.backend,
        "identity": info.identity,
        "kind": info.kind,
        "parameters": info.parameters if info.parameters is not None else meta.parameters,
        "parameters_from": "weights" if info.parameters is not None else ("meta" if meta.parameters else None),
        "family": meta.family or info.family,
        "dtype": info.dtype,
        "chat_template": info.chat,
        "instruction_tuned": meta.instruction_tuned,
        "context_length": info.context_length,
        "revision": info.revision,
        "sha256": info.sha256,
        "training_tokens": meta.training_tokens,
        "release_date": meta.release_date.isoformat() if meta.release_date else None,
        "read": read_record(info.name),
    }


def read_record(name: str) -> dict | None:
    """What the model table keeps of a `kbench read` checkpoint's read.json (None: not one)."""
    path = Path(name) / "read.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    return {"base_model": record.get("base_model"), "text_sha256": record.get("text_sha256"), "steps": record.get("steps")}


def unavailable_row(entry: ModelEntry, error: str) -> dict[str, Any]:
    """The row of a model that could not be opened: what the suite file says, and why."""
    return {"model": entry.model, "error": error, **entry.meta.model_dump(mode="json")}
