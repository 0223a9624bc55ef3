"""The result cache as a wrapper around any `LanguageModel`: the cache is not part of the model.

    model = CachedModel(backend_model, ResultCache(path))    # what `open_model(spec)` (below) returns
    with model.produced_by(code_hash("kbench.tasks.kee.techniques.caa")):
        model.generate(prompts, 16, stop=["\\n"], intervention=steering)
    model.cache_stats()   -> {"hits": 0, "computed": 40, "by_method": {"generate": {...}}}

A key holds everything that changes an output: the model's identity (weights, tokenizer,
dtype), the method and its parameters, the item's text (prompt, gold or answer), the
intervention's key, the source of the code that computes outputs (the backend's `code`, this
module's and the caller's `produced_by` hash) and the kbench, torch and transformers versions. Batch size, device
and run directory never enter a key.

A lookup is all-or-nothing per call: when every item of a call is cached, the cached values
come back and the model is not called; otherwise the whole call goes to the model, exactly as on
an empty cache, and its values are stored. A backend's batches are a function of the call's
inputs, so a call resumed after a crash returns the bits an uninterrupted one returns (filling
in only the missing items would put them into other batches and change their last bits).

Without a store (`--no-cache`, `cache=None`) every call goes to the model and is counted as
computed. The wrapper offers exactly the interface (`LanguageModel`, and `WhiteBoxModel`'s
methods, which a backend without `Capability.WHITE_BOX` refuses): no attribute passes through
to the backend, so a task cannot reach past the interface.

White-box values: `activations` are stored per text as float32 bytes (base64, with the shape),
so a cached fit gets back the exact bits (SmolLM2: 69 KB per text and site for its 30 x 576
residual values); `strongest_attention` as integer lists.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Sequence

from kbench.io import stable_hash
from kbench.models.interface import BACKENDS, Capability, LanguageModel, ModelInfo, ModelSpec, NetworkLayout, require
from kbench.models.prompt import Prompt, prompt_key
from kbench.models.provenance import cache_versions, source_hash
from kbench.models.result_cache import ResultCache


class CachedModel:
    def __init__(self, inner: LanguageModel, cache: ResultCache | None):
        self.inner = inner
        self.cache = cache
        self.caller_code: str | None = None
        self.own_code = source_hash([__name__])  # how values are keyed and stored
        self._stats: dict[str, dict[str, int]] = {}

    # ------------------------------------------------------------------ what the model is
    @property
    def info(self) -> ModelInfo:
        return self.inner.info

    def describe(self) -> dict:
        return self.inner.describe()

    def render(self, prompt: Prompt | str) -> str:
        return self.inner.render(prompt)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return self.inner.token_ids(texts)

    def sequence_start(self) -> tuple[str, str]:
        return self.inner.sequence_start()

    def training_weights(self):
        """The backend's trainable weights (`Capability.TRAIN`: xteval's soft prompts and fine-tuning,
        `kbench read`); training outputs are not cached."""
        return self.inner.training_weights()

    # ------------------------------------------------------------------ provenance and counts
    @contextlib.contextmanager
    def produced_by(self, code: str | None):
        """Calls inside the block also key their entries by `code`, the hash of the calling code
        (`provenance.code_hash(technique module)`), so a changed technique never gets the old
        technique's outputs back, even where its Intervention key did not change."""
        previous, self.caller_code = self.caller_code, code
        try:
            yield
        finally:
            self.caller_code = previous

    def close(self) -> None:
        """Release what the backend holds outside this process's memory (an engine's processes, a
        server's connections); a backend without such resources has no `close`."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()

    def cache_stats(self) -> dict:
        """Items answered from the cache vs computed since this wrapper was made, overall and per
        call: {"hits": n, "computed": m, "by_method": {"generate": {"hits": .., "computed": ..}}}."""
        total = {kind: sum(s[kind] for s in self._stats.values()) for kind in ("hits", "computed")}
        return {**total, "by_method": {call: dict(s) for call, s in self._stats.items()}}

    # ------------------------------------------------------------------ the model's methods
    def rank_first_token(
        self,
        prompts: Sequence[Prompt | str],
        golds: Sequence[str],
        *,
        candidate_ids: Sequence[int] | None = None,
        intervention=None,
    ) -> list[tuple[int, float]]:
        keys = self._rank_keys(prompts, golds, candidate_ids, intervention)
        values = self._one_method(
            "rank_first_token",
            keys,
            lambda: self.inner.rank_first_token(prompts, golds, candidate_ids=candidate_ids, intervention=intervention),
        )
        return [_rank(r, lp) for r, lp in values]

    def score_answers(
        self, prompts: Sequence[Prompt | str], answers: Sequence[str], *, intervention=None
    ) -> list[tuple[float, list[float]]]:
        items = [{"prompt": prompt_key(p), "answer": a} for p, a in zip(prompts, answers)]
        keys = self._keys("score_answers", {}, items, intervention)
        values = self._one_method(
            "score_answers", keys, lambda: self.inner.score_answers(prompts, answers, intervention=intervention)
        )
        return [(float(s), [float(x) for x in per]) for s, per in values]

    def generate(
        self, prompts: Sequence[Prompt | str], max_new_tokens: int = 32, stop: Sequence[str] | None = None, *, intervention=None
    ) -> list[str]:
        keys = self._generate_keys(prompts, max_new_tokens, stop, intervention)
        return self._one_method(
            "generate", keys, lambda: self.inner.generate(prompts, max_new_tokens, stop, intervention=intervention)
        )

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
        """Cached as its two parts, so a later `generate` or `rank_first_token` of the same items
        is served too."""
        keys = {
            "generate": self._generate_keys(prompts, max_new_tokens, stop, intervention),
            "rank_first_token": self._rank_keys(prompts, golds, candidate_ids, intervention),
        }

        def compute() -> dict[str, list]:
            out = self.inner.generate_and_rank(
                prompts, golds, max_new_tokens, stop, candidate_ids=candidate_ids, intervention=intervention
            )
            return {"generate": [text for text, _, _ in out], "rank_first_token": [[rank, lp] for _, rank, lp in out]}

        values = self._call("generate_and_rank", keys, len(prompts), compute)
        return [(text, *_rank(r, lp)) for text, (r, lp) in zip(values["generate"], values["rank_first_token"])]

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
        params = {"k": k, "temperature": temperature, "seed": seed, "max_new_tokens": max_new_tokens, "stop": list(stop or [])}
        keys = self._keys("sample", params, [{"prompt": prompt_key(p)} for p in prompts], intervention)
        values = self._one_method(
            "sample",
            keys,
            lambda: self.inner.sample(prompts, k, temperature, seed, max_new_tokens, stop, intervention=intervention),
        )
        return [list(samples) for samples in values]

    # ------------------------------------------------------------------ white-box methods
    def layout(self) -> NetworkLayout:
        require(self, [Capability.WHITE_BOX], "the network layout")
        return self.inner.layout()

    def special_token_ids(self) -> frozenset[int]:
        require(self, [Capability.WHITE_BOX], "the special token ids")
        return self.inner.special_token_ids()

    def activations(self, texts: Sequence[Prompt | str], site: str, layers: Sequence[int]):
        require(self, [Capability.WHITE_BOX], "reading activations")
        keys = self._keys("activations", {"site": site, "layers": list(layers)}, [{"text": prompt_key(t)} for t in texts], None)

        def compute() -> list:
            return [_tensor_value(row) for row in self.inner.activations(texts, site, layers)]

        return _stacked([_value_tensor(v) for v in self._one_method("activations", keys, compute)], len(layers))

    def rank_first_token_each(self, prompts: Sequence[Prompt | str], golds: Sequence[str], interventions: Sequence) -> list:
        """Keyed per intervention and item (method "rank_first_token_each": its values come from a
        KV-cached last step, so they are never mixed with `rank_first_token`'s)."""
        require(self, [Capability.WHITE_BOX], "rank_first_token_each")
        items = [{"prompt": prompt_key(p), "gold": g} for p, g in zip(prompts, golds)]
        keys = [key for i in interventions for key in self._keys("rank_first_token_each", {}, items, i)]

        def compute() -> list:
            per = self.inner.rank_first_token_each(prompts, golds, interventions)
            return [list(value) for values in per for value in values]

        flat = self._one_method("rank_first_token_each", keys, compute)
        n = len(prompts)
        return [[(int(r), float(lp)) for r, lp in flat[k * n : (k + 1) * n]] for k in range(len(interventions))]

    def strongest_attention(self, sequences: Sequence[Sequence[int]], queries: Sequence[int]):
        import torch

        require(self, [Capability.WHITE_BOX], "reading attention")
        items = [{"sequence": [int(t) for t in seq]} for seq in sequences]
        keys = self._keys("strongest_attention", {"queries": [int(q) for q in queries]}, items, None)
        values = self._one_method(
            "strongest_attention", keys, lambda: self.inner.strongest_attention(sequences, queries).tolist()
        )
        return torch.tensor(values, dtype=torch.long)

    # ------------------------------------------------------------------ keys and lookups
    def _rank_keys(self, prompts, golds, candidate_ids, intervention) -> list[str]:
        items = [{"prompt": prompt_key(p), "gold": g} for p, g in zip(prompts, golds)]
        return self._keys("rank_first_token", _candidates(candidate_ids), items, intervention)

    def _generate_keys(self, prompts, max_new_tokens, stop, intervention) -> list[str]:
        params = {"max_new_tokens": max_new_tokens, "stop": list(stop or [])}
        return self._keys("generate", params, [{"prompt": prompt_key(p)} for p in prompts], intervention)

    def _keys(self, method: str, params: dict, items: list[dict], intervention) -> list[str]:
        if intervention is not None and intervention.white_box:
            require(self, [Capability.WHITE_BOX], f"{method} with intervention {intervention.key[:12]}")
        common = {
            "model": self.inner.info.identity,
            "method": method,
            "params": params,
            "intervention": intervention.key if intervention is not None else None,
            "code": [self.inner.info.code, self.own_code, self.caller_code],
            "versions": cache_versions(),
        }
        return [ResultCache.key(**common, item=item) for item in items]

    def _one_method(self, method: str, keys: list[str], compute: Callable[[], list]) -> list:
        return self._call(method, {method: keys}, len(keys), lambda: {method: compute()})[method]

    def _call(
        self, call: str, keys: dict[str, list[str]], n_items: int, compute: Callable[[], dict[str, list]]
    ) -> dict[str, list]:
        """{method: values in input order}: all from the store when every key of every method is
        there, else all from `compute()` (which are then stored)."""
        wanted = [key for method_keys in keys.values() for key in method_keys]
        found = self.cache.get_many(wanted) if self.cache is not None and wanted else {}
        hit = all(key in found for key in wanted)
        stats = self._stats.setdefault(call, {"hits": 0, "computed": 0})
        stats["hits" if hit else "computed"] += n_items
        if hit:
            return {method: [found[key] for key in method_keys] for method, method_keys in keys.items()}
        values = compute()
        if self.cache is not None:
            for method, method_keys in keys.items():
                self.cache.put_many(dict(zip(method_keys, values[method])), method, self.inner.info.name)
        return values


def _rank(rank, logprob) -> tuple[int | None, float | None]:
    """A (rank, logprob) pair as stored; None (beyond a server's top k) stays None."""
    return (None if rank is None else int(rank), None if logprob is None else float(logprob))


def _tensor_value(tensor) -> dict:
    """A float32 tensor as a JSON value that gives back the same bits."""
    array = tensor.float().contiguous().numpy()
    return {"shape": list(array.shape), "float32": base64.b64encode(array.tobytes()).decode("ascii")}


def _value_tensor(value: dict):
    import torch

    raw = bytearray(base64.b64decode(value["float32"]))
    return torch.frombuffer(raw, dtype=torch.float32).reshape(value["shape"])


def _stacked(rows: list, layers: int):
    import torch

    return torch.stack(rows) if rows else torch.zeros((0, layers))


def _candidates(candidate_ids: Sequence[int] | None) -> dict:
    """The key parameters describing a candidate vocabulary (LAMA's common vocabulary)."""
    return {"candidates": None if candidate_ids is None else stable_hash(sorted(set(candidate_ids)))}


def open_model(spec: ModelSpec, cache: ResultCache | None = None) -> CachedModel:
    """The model a spec names, wrapped in the result cache: `cache`, else the shared
    `$KBENCH_CACHE/results.sqlite`, or no store at all when `spec.use_cache` is off."""
    from kbench.paths import result_cache_path

    inner = BACKENDS.get(spec.backend).open(spec)
    if not spec.use_cache:
        cache = None
    elif cache is None:
        cache = ResultCache(result_cache_path())
    return CachedModel(inner, cache)
