"""The model interface every evaluation task talks to (in the spirit of lm-eval's `LM`).

`LanguageModel` is what a backend implements and a task may call. `WhiteBoxModel` adds the
handles that techniques which hook into the network (CAA, ITI, DeCoRe, Activation Decoding)
need. The Hugging Face implementation is `kbench.models.runner.ModelRunner`. `open_model(spec)`
opens the backend's model inside the result cache's wrapper (`kbench.models.cached.CachedModel`,
which adds `produced_by` and `cache_stats`); a backend knows nothing of the cache. Another
backend (vLLM) would implement `LanguageModel` and register its opener in `BACKENDS`.

Text contract (all methods): an answer / gold is the exact continuation of its prompt, leading
space included (" France"); results come back in input order, one per prompt; every method
batches internally, so callers pass whole lists.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from kbench.errors import UserError
from kbench.registry import Registry


class Capability(StrEnum):
    """What a backend can do beyond the text contract. Every backend generates; the rest differ.

    A task or technique declares the capabilities it needs (`needs`); `require` refuses a model
    that lacks one before any work starts.
    """

    GENERATE = "generate"  # greedy and seeded sampling, with stop strings (`generate`, `sample`)
    LOGLIKELIHOOD = "loglikelihood"  # continuation log-probs, teacher-forced (`score_answers`)
    RANK_EXACT = "rank_exact"  # first-token rank over the full vocabulary or over candidates
    RANK_TOP_K = "rank_top_k"  # first-token rank known only within the top k a server returns
    WHITE_BOX = "white_box"  # layer/head layout, activations, interventions (steering, head masks, logits processors)
    TRAIN = "train"  # gradients through the network: soft prompts, fine-tuning (xteval, `kbench read`)


def require(model, needed, who: str) -> None:
    """Refuse `model` for `who` (a task or technique, e.g. "technique caa") when it lacks one of
    `needed`: one line naming the capability and the backends that have it (exit code 2)."""
    have = set(getattr(model, "capabilities", ()))
    for capability in needed:
        capability = Capability(capability)
        if capability not in have:
            offering = [name for name, caps in BACKEND_CAPABILITIES.items() if capability in caps]
            raise UserError(
                f"{who} needs the capability {capability.value!r}, which model {model.name!r} "
                f"(backend {getattr(model, 'backend', '?')}) lacks; backends that have it: {', '.join(offering) or 'none'}"
            )


@dataclass(frozen=True)
class Intervention:
    """A change to the model's computation for one runner call.

    key: a complete description of the change (technique, layer, multiplier, vector hash...);
        it enters every cache key, so two different interventions must have different keys.
    hooks: `hooks(model)` returns a context manager that is entered around all forward passes
        of the call, e.g. one registering forward hooks that add a steering vector.
    logits_processor: `processor(input_ids, scores) -> scores` with input_ids [B, T] (left
        padded with the pad id) and scores [B, V] float32; applied wherever the runner reads
        next-token scores: before ranking, before scoring each answer token, at every decoding
        step. A transformers `LogitsProcessorList` fits this signature.
    """

    key: str
    hooks: Callable[[Any], contextlib.AbstractContextManager] | None = None
    logits_processor: Callable[[Any, Any], Any] | None = None


@runtime_checkable
class LanguageModel(Protocol):
    name: str  # what the user asked for ("smollm2-135m", a path, a hub id)
    identity: str  # a content hash of weights + tokenizer + dtype: equal identities give equal outputs
    kind: str  # "causal" or "masked"
    dtype: str
    tokenizer: Any  # a transformers tokenizer (prompt building needs chat templates and vocabularies)
    code: str  # a hash of the source that computes outputs: changed code never reuses cached ones
    backend: str  # the BACKENDS name that opened it ("hf", ...)
    capabilities: frozenset[Capability]  # what this model can do (a served model: what its server's probe found)

    def describe(self) -> dict:
        """The envelope's `model` block: name, identity, kind, dtype, weights provenance."""

    def rank_first_token(
        self, prompts: Sequence[str], golds: Sequence[str], *, candidate_ids: Sequence[int] | None = None, intervention=None
    ) -> list[tuple[int, float]]:
        """(rank, logprob) of each gold's first token at the prompt's next position (the mask
        position for masked LMs). rank = 1 + the number of tokens scored strictly higher, over
        the full vocabulary or over `candidate_ids`; logprob is over the full vocabulary.
        A backend with `RANK_TOP_K` but not `RANK_EXACT` (a server's `top_logprobs`) knows a
        rank only within its top k: rank is None (meaning "> k") and logprob None when the
        gold's first token is not among them; it refuses `candidate_ids`. A backend with
        neither raises `UserError`: the caller checks `capabilities` first."""

    def score_answers(
        self, prompts: Sequence[str], answers: Sequence[str], *, intervention=None
    ) -> list[tuple[float, list[float]]]:
        """(summed log-prob, per-token log-probs) of each answer as the continuation of its
        prompt, teacher-forced. Causal LMs only."""

    def generate(
        self, prompts: Sequence[str], max_new_tokens: int = 32, stop: Sequence[str] | None = None, *, intervention=None
    ) -> list[str]:
        """Greedy continuation of each prompt, cut before the first stop string, special tokens
        dropped. Causal LMs only."""

    def generate_and_rank(
        self,
        prompts: Sequence[str],
        golds: Sequence[str],
        max_new_tokens: int = 32,
        stop: Sequence[str] | None = None,
        *,
        candidate_ids: Sequence[int] | None = None,
        intervention=None,
    ) -> list[tuple[str, int, float]]:
        """`generate` and `rank_first_token` of the same prompts: (text, rank, logprob)."""

    def sample(
        self,
        prompts: Sequence[str],
        k: int,
        temperature: float,
        seed: int,
        max_new_tokens: int = 32,
        stop: Sequence[str] | None = None,
        *,
        intervention=None,
    ) -> list[list[str]]:
        """k samples per prompt at `temperature`, reproducible from `seed` (independent of
        batching). Causal LMs only."""


@runtime_checkable
class WhiteBoxModel(LanguageModel, Protocol):
    """A LanguageModel whose network a technique may hook into (`Intervention.hooks`)."""

    model: Any  # the torch module (layers, attention heads, lm_head)
    device: Any
    pad_id: int


@dataclass(frozen=True)
class ModelSpec:
    """What `--model` and the shared model options name."""

    name: str
    dtype: str = "float32"
    device: str = "cpu"
    trust_remote_code: bool = False
    batch_size: int | None = None
    use_cache: bool = True
    backend: str = "hf"


BACKENDS: Registry = Registry("model backend", package="kbench.models")
#: The most each backend can offer (a served model may offer less: its probe decides); for error messages.
BACKEND_CAPABILITIES: dict[str, frozenset[Capability]] = {"hf": frozenset(Capability)}


def open_model(spec: ModelSpec, cache=None):
    """The model a spec names, wrapped in the result cache (`CachedModel`): `cache`, else the
    shared `$KBENCH_CACHE/results.sqlite`, or no store at all when `spec.use_cache` is off."""
    from kbench.models.cached import CachedModel
    from kbench.models.result_cache import ResultCache
    from kbench.paths import result_cache_path

    inner = BACKENDS.get(spec.backend)(spec)
    if not spec.use_cache:
        cache = None
    elif cache is None:
        cache = ResultCache(result_cache_path())
    return CachedModel(inner, cache)
