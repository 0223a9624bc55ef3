"""The facts of a `ModelInfo` (`kbench.models.interface`) that backends read off local weights and
tokenizers: parameter count, architecture, context length, weight hashes, chat template, the text a
sequence starts with."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from kbench.io import stable_hash
from kbench.models.interface import Capability, ModelInfo
from kbench.models.prompt import Prompt, render_text


def loaded_info(loaded, backend: str, device: str, code: str, capabilities: frozenset[Capability], weights: dict) -> ModelInfo:
    """The `ModelInfo` of a `LoadedModel` (weights and tokenizer in this process) whose weights
    provenance is `weights`: the chat template is rendered here, so a reply's start can follow it."""
    revision, sha256 = weights_hashes(weights)
    template = template_sha256(loaded.tokenizer)
    return ModelInfo(
        name=loaded.name,
        identity=loaded.identity,
        kind=loaded.kind,
        dtype=loaded.dtype,
        backend=backend,
        device=device,
        code=code,
        capabilities=capabilities,
        chat=template is not None,
        chat_template_sha256=template,
        prefills_reply=True,
        revision=revision,
        sha256=sha256,
        **network_facts(loaded.model),
    )


def template_sha256(tokenizer) -> str | None:
    """sha256 of the tokenizer's chat template (None: it has none)."""
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        return None
    text = template if isinstance(template, str) else stable_hash(template)  # a dict of named templates
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sequence_start(tokenizer) -> tuple[str, str]:
    """(the text a scored sequence follows, what it is): the BOS token, which lm-pub-quiz puts before
    each statement (adding it where the tokeniser does not), else the EOS token (GPT-2's document
    separator), else nothing (a tokeniser that adds its BOS id itself, or none known)."""
    for kind in ("bos", "eos"):
        text = getattr(tokenizer, f"{kind}_token", None)
        if isinstance(text, str) and text:
            return text, kind
    return "", "none"


class LocalTokenizerMethods:
    """The prompt and token methods of a backend whose tokenizer is in this process (`self.tokenizer`):
    the Hugging Face and in-process vLLM backends."""

    tokenizer: Any

    def render(self, prompt: Prompt | str) -> str:
        return render_text(prompt, self.tokenizer)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return self.tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []

    def sequence_start(self) -> tuple[str, str]:
        return sequence_start(self.tokenizer)


def weights_hashes(weights: dict[str, Any]) -> tuple[str | None, str | None]:
    """(revision, sha256) of a weights provenance block: one sha256 for a folder of weight files, the
    hash of their names and hashes."""
    files = weights.get("files_sha256")
    return weights.get("revision") or None, weights.get("sha256") or (stable_hash(sorted(files.items())) if files else None)


def network_facts(network: Any) -> dict[str, Any]:
    """{"parameters", "family", "context_length"} of a loaded transformers network."""
    config = getattr(network, "config", None)
    return {
        "parameters": _count_parameters(network),
        "family": getattr(config, "model_type", None),
        "context_length": _context_length(config),
    }


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
