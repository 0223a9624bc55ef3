"""The model interface every evaluation task talks to (in the spirit of lm-eval's `LM`).

Four names, one meaning each:
- `LanguageModel`: the interface a backend implements and a task calls (text in, text/scores
  out); `WhiteBoxModel` adds the layer/head layout, activations and interventions that CAA, ITI,
  DeCoRe and Activation Decoding need. Tasks and techniques see nothing else of a model.
- `CachedModel` (`kbench.models.cached`): the result cache around any `LanguageModel`; it is
  what `open_model(spec)` (in that module) returns and what a task's context holds.
- the network: the torch module of the Hugging Face backend. Only `kbench/models/` touches it.
- `LoadedModel` (`kbench.models.loading`): the Hugging Face backend's loaded weights, tokenizer
  and provenance; only `kbench/models/` sees it.
"Runner" means the Hugging Face backend, `kbench.models.runner.ModelRunner`, and nothing else.
A backend knows nothing of the cache. Another backend implements `LanguageModel` (and
`WhiteBoxModel` if it can) in one module and registers its opener with `@register_backend(name, capabilities)`;
the backends in kbench meet the text contract through `kbench.models.template.TemplateModel`, which
renders the prompts and checks the intervention once and hands the rest to the backend's own steps.

Text contract (all methods): a prompt is a `Prompt` value or plain text (`kbench.models.prompt`),
which the backend renders (its chat template, or a server's chat API); an answer / gold is the exact
continuation of the rendered prompt, leading space included (" France"); results come back in input
order, one per prompt; every method batches internally, so callers pass whole lists. Nothing outside
`kbench/models/` touches a tokenizer: what a task needs of tokens is a typed method (`token_ids`,
`sequence_start`, `special_token_ids`), and what a model is, its frozen `ModelInfo` (`info`).

Interventions are data (`Intervention`: steering vectors, head shifts, a logits recipe), never
code that reaches into a network: the backend carries them out, and their `key` enters every
cache key of the call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from kbench.errors import UserError
from kbench.models.prompt import Prompt
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
    info = model.info
    have = set(info.capabilities)
    if Capability.RANK_EXACT in have:  # an exact rank is known within any top k too
        have.add(Capability.RANK_TOP_K)
    for capability in needed:
        capability = Capability(capability)
        if capability not in have:
            offering = [name for name, backend in BACKENDS.items().items() if capability in backend.capabilities]
            why = dict(info.missing).get(capability.value)  # a served model's probe says why
            raise UserError(
                f"{who} needs the capability {capability.value!r}, which model {info.name!r} "
                f"(backend {info.backend}) lacks{f': {why}' if why else ''}; "
                f"backends that have it: {', '.join(offering) or 'none'}"
            )


@dataclass(frozen=True)
class Steering:
    """Add `multiplier * vector` (hidden,) to the residual stream leaving decoder block `layer`, at
    every position, or (`last_only`) at the last position of each forward pass: with a KV cache
    that is the prompt's last token, then each generated token (CAA)."""

    layer: int
    vector: Any
    multiplier: float = 1.0
    last_only: bool = True


@dataclass(frozen=True)
class HeadShift:
    """Add shifts[layer] ((num_heads, head_dim), zero rows for untouched heads) to the per-head
    attention outputs (the input of the output projection), at every position or the last (ITI)."""

    shifts: Mapping[int, Any]
    last_only: bool = True


@dataclass(frozen=True)
class MaskedHeadContrast:
    """DeCoRe_entropy: next-token scores (1 + a) · base − a · masked, where masked are the logits of
    the same model with `heads` ({layer: [head, ...]}) zeroed and a the entropy of softmax(base),
    capped at `alpha_cap` when given."""

    heads: Mapping[int, Sequence[int]]
    alpha_cap: float | None = None


@dataclass(frozen=True)
class ActivationEntropy:
    """Activation Decoding: scores log_softmax(final) − alpha · H(v), H the in-context entropy of
    lm_head(residual leaving block `layer`) over the prompt's positions (after the final norm when
    `final_norm`); tokens below relative_top · max p placed below every plausible one."""

    layer: int
    alpha: float
    relative_top: float
    final_norm: bool = False


@dataclass(frozen=True)
class SamplingTruncation:
    """Top-k / top-p truncation of the sampling distribution at `temperature` (MAPLE's sampling
    scheme): tokens outside it can never be drawn."""

    temperature: float
    top_k: int | None = None
    top_p: float = 1.0


LogitsRecipe = MaskedHeadContrast | ActivationEntropy | SamplingTruncation


@dataclass(frozen=True)
class Intervention:
    """A change to the model's computation for one call, described as data.

    key: a complete description of the change (technique, layer, multiplier, vector hash...);
        it enters every cache key, so two different interventions must have different keys.
    edits: changes to the forward passes (`Steering`, `HeadShift`), applied to every pass of the call.
    logits: a change to the next-token scores wherever the backend reads them: before ranking,
        before scoring each answer token, at every decoding step.
    """

    key: str
    edits: tuple[Steering | HeadShift, ...] = ()
    logits: LogitsRecipe | None = None

    @property
    def white_box(self) -> bool:
        """Whether carrying it out needs the network (everything but a sampling truncation)."""
        return bool(self.edits) or (self.logits is not None and not isinstance(self.logits, SamplingTruncation))


@dataclass(frozen=True)
class ModelInfo:
    """What a model is, built once by its backend when it opens the model (`LanguageModel.info`;
    `CachedModel.info` is the wrapped model's)."""

    name: str  # what the user asked for ("smollm2-135m", a path, a hub id)
    identity: str  # a content hash of weights + tokenizer + dtype: equal identities give equal outputs
    kind: str  # "causal" or "masked"
    dtype: str
    backend: str  # the BACKENDS name that opened it ("hf", ...)
    device: str  # where outputs are computed: "cpu", "cuda:0", ... or "server" for a served model (results' environment)
    code: str  # a hash of the source that computes outputs: changed code never reuses cached ones
    capabilities: frozenset[Capability]  # what this model can do (a served model: what its server's probe found)
    chat: bool = False  # it takes chat prompts (a chat template kbench renders, or a server that applies its own)
    chat_template_sha256: str | None = None  # the chat template kbench renders with (None: none, or the server's)
    prefills_reply: bool = False  # a chat prompt's start of the reply can be sent after the rendered turn
    revision: str | None = None  # the hub revision of the weights, where known
    sha256: str | None = None  # the weights' sha256 (one file, or the hash of a folder's files' hashes)
    parameters: int | None = None  # counted from the loaded weights (tied embeddings once); None: out of reach
    family: str | None = None  # the architecture's model_type ("llama"), where the config says
    context_length: int | None = None
    missing: tuple[tuple[str, str], ...] = ()  # (capability, why it is missing), where the backend knows


#: (rank, logprob) of a gold's first token; both None beyond a server's top k (`RANK_TOP_K`, see `rank_first_token`).
Rank = tuple[int | None, float | None]


def described(info: ModelInfo, weights: dict) -> dict:
    """`describe()` of a backend whose identity is its `info` (vLLM, served): the envelope's `model` block."""
    keys = ("name", "identity", "kind", "dtype", "backend")
    return {**{key: getattr(info, key) for key in keys}, "weights": weights}


@runtime_checkable
class LanguageModel(Protocol):
    """Prompts are `Prompt` values or plain strings (a string is a plain-text prompt); the backend
    renders them (`kbench.models.prompt`)."""

    @property
    def info(self) -> ModelInfo:
        """What the model is (read-only: `CachedModel` passes its inner model's on)."""

    def describe(self) -> dict:
        """The envelope's `model` block: name, identity, kind, dtype, weights provenance."""

    def render(self, prompt: Prompt | str) -> str:
        """The prompt as this model reads it, as items store it: the text the tokenizer reads (a chat
        prompt through the chat template), or a served chat request's messages as a JSON list."""

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids, tokenised alone without special tokens (LAMA's one-token filter and
        common vocabulary). A model without a tokenizer raises `UserError` saying how to give one."""

    def sequence_start(self) -> tuple[str, str]:
        """(the text a whole scored sequence follows, "bos" | "eos" | "none"): the BOS token's text,
        else the EOS token's, else "" (the choice task's statements)."""

    def rank_first_token(
        self,
        prompts: Sequence[Prompt | str],
        golds: Sequence[str],
        *,
        candidate_ids: Sequence[int] | None = None,
        intervention=None,
    ) -> list[Rank]:
        """(rank, logprob) of each gold's first token at the prompt's next position (the mask
        position for masked LMs). rank = 1 + the number of tokens scored strictly higher, over
        the full vocabulary or over `candidate_ids`; logprob is over the full vocabulary.
        A backend with `RANK_TOP_K` but not `RANK_EXACT` (a server's `top_logprobs`) knows a
        rank only within its top k: rank is None (meaning "> k") and logprob None when the
        gold's first token is not among them; it refuses `candidate_ids`. A backend with
        neither raises `UserError`: the caller checks `capabilities` first."""

    def score_answers(
        self, prompts: Sequence[Prompt | str], answers: Sequence[str], *, intervention=None
    ) -> list[tuple[float, list[float]]]:
        """(summed log-prob, per-token log-probs) of each answer as the continuation of its
        prompt, teacher-forced. Causal LMs only."""

    def generate(
        self, prompts: Sequence[Prompt | str], max_new_tokens: int = 32, stop: Sequence[str] | None = None, *, intervention=None
    ) -> list[str]:
        """Greedy continuation of each prompt, cut before the first stop string, special tokens
        dropped. Causal LMs only."""

    def generate_and_rank(
        self,
        prompts: Sequence[Prompt | str],
        golds: Sequence[str],
        max_new_tokens: int = 32,
        stop: Sequence[str] | None = None,
        *,
        candidate_ids: Sequence[int] | None = None,
        intervention=None,
    ) -> list[tuple[str, int | None, float | None]]:
        """`generate` and `rank_first_token` of the same prompts: (text, rank, logprob)."""

    def sample(
        self,
        prompts: Sequence[Prompt | str],
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


@dataclass(frozen=True)
class NetworkLayout:
    num_layers: int  # decoder blocks
    num_heads: int  # attention heads per block
    head_dim: int
    hidden_size: int  # width of the residual stream
    vocab_size: int


#: What `WhiteBoxModel.activations` reads at each text's last token: the residual stream leaving
#: each decoder block, or each block's per-head attention outputs (the output projection's input).
ACTIVATION_SITES = ("residual", "heads")


@runtime_checkable
class WhiteBoxModel(LanguageModel, Protocol):
    """A LanguageModel with `Capability.WHITE_BOX`: its layout, its activations, interventions."""

    def layout(self) -> NetworkLayout:
        """Layers, heads, head size, hidden size and vocabulary size of the network."""

    def special_token_ids(self) -> frozenset[int]:
        """The tokenizer's special token ids (BOS, EOS, chat markers): what a synthetic token
        sequence must avoid (DeCoRe's copy task)."""

    def activations(self, texts: Sequence[Prompt | str], site: str, layers: Sequence[int]):
        """float32 activations at the last token of each text (tokenised alone, special tokens
        added), a tensor [texts, len(layers), hidden] for site "residual" or [texts, len(layers),
        heads, head_dim] for site "heads"."""

    def rank_first_token_each(self, prompts: Sequence[Prompt | str], golds: Sequence[str], interventions: Sequence[Intervention]):
        """`rank_first_token` under each intervention ([per intervention: [(rank, logprob)]]), for
        interventions that edit only the last position; the backend may share the prompts' prefix."""

    def strongest_attention(self, sequences: Sequence[Sequence[int]], queries: Sequence[int]):
        """For each token-id sequence (run alone, no padding), the position each head attends to
        most from each query position: an int tensor [sequences, layers, heads, len(queries)]."""


@runtime_checkable
class TrainableModel(LanguageModel, Protocol):
    """A LanguageModel with `Capability.TRAIN`: the weights gradients flow through."""

    def training_weights(self) -> Any:
        """The loaded weights (`kbench.models.loading.LoadedModel`) that xteval's soft prompts /
        fine-tuning and `kbench read` train."""


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


@dataclass(frozen=True)
class Backend:
    """A registered backend: its opener and the most it can offer (a served model may offer less:
    its probe decides); `require` names the backends that have a missing capability."""

    open: Callable[[ModelSpec], LanguageModel]
    capabilities: frozenset[Capability]


BACKENDS: Registry[Backend] = Registry("model backend", package="kbench.models")


def register_backend(name: str, capabilities) -> Callable:
    """`@register_backend("hf", Capability)` on a backend's opener, at its definition."""

    def decorate(opener):
        BACKENDS.add(name, Backend(opener, frozenset(capabilities)))
        return opener

    return decorate
