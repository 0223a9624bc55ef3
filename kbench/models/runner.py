"""The batched model runner: every evaluation reads model outputs through these methods.

    runner = ModelRunner(load_model("smollm2-135m"))
    runner.rank_first_token(["Paris is the capital of"], [" France"])   -> [(1, -0.4)]
    runner.score_answers(["Paris is the capital of"], [" France"])      -> [(-1.2, [-0.4, -0.8])]
    runner.generate(["Q: ...\nA:"], max_new_tokens=16, stop=["\n"])     -> ["Paris"]
    runner.sample(["Q: ...\nA:"], k=20, temperature=0.7, seed=42)       -> [[20 strings]]
    runner.generate_and_rank(prompts, golds, 16, stop=["\n"])         -> [("Paris", 1, -0.1)]

Text contract: an answer / gold is the exact continuation of its prompt, leading space
included (" France"); `kbench.models.encoding` turns texts into token ids by it.

Batching (`kbench.models.batching`): items are sorted by length, cut into batches (`batch_size`,
or sized from free memory on GPU / a token budget on CPU, halved on out-of-memory), and results
come back in input order. `batch_size` counts prompts (in `sample` each prompt then decodes up to k rows). Causal
LMs read next-token scores from packed rows (`kbench.models.packing`: several prompts per row,
no padding) and decode from a left-padded KV cache; masked LMs, and calls whose intervention
hooks into the model (a hook may act on the last position), run left-padded batches with
explicit position ids instead (right-padded for masked LMs). Batch composition and packing
change results only by float rounding, and on CPU the batches of a call are a function of the
call's inputs alone (not of earlier calls or of timing), so the same call computes the same bits.

The runner computes every call it gets (each distinct item once); the result cache is a wrapper
around it (`kbench.models.cached.CachedModel`), keyed by `code`, the source of the runner's
modules, among the rest.

Interventions (steering vectors, head shifts, logits recipes) come as data, `Intervention`, per
call; `kbench.models.interventions` carries them out on the network, so techniques reuse these
batched paths instead of writing their own loops. The white-box methods (layout, activations,
attention) are `kbench.models.whitebox`'s, on the same batching.

Names: `loaded` is the `LoadedModel` (weights, tokenizer, provenance), `network` its torch module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from kbench.errors import UserError
from kbench.io import stable_hash
from kbench.models.batching import MAX_BATCH
from kbench.models.cpu_allocator import keep_freed_memory
from kbench.models.decoding import decode
from kbench.models.encoding import PromptEncoder
from kbench.models.info import LocalTokenizerMethods, loaded_info
from kbench.models.interface import Capability, Intervention, Rank, register_backend
from kbench.models.interventions import Realised, realise
from kbench.models.loading import LoadedModel
from kbench.models.packing import last_token_logits, pack, packing_works
from kbench.models.padding import pad_left, pad_right
from kbench.models.provenance import RUNNER_MODULES, source_hash, weights_provenance
from kbench.models.ranking import gold_ranks
from kbench.models.shared_prefix import shares_prefixes
from kbench.models.template import TemplateModel
from kbench.models.tree_packing import answer_logprobs
from kbench.models.tree_packing import build as build_tree
from kbench.models.whitebox import WhiteBoxMethods


class ModelRunner(LocalTokenizerMethods, TemplateModel, WhiteBoxMethods):
    def __init__(self, loaded: LoadedModel, batch_size: int | None = None):
        import torch

        self.torch = torch
        self.loaded = loaded
        self.network = loaded.model
        self.tokenizer = loaded.tokenizer
        self.batch_size = batch_size
        self.code = source_hash(RUNNER_MODULES)  # what computes this backend's outputs (cache keys)
        self.device = torch.device(loaded.device)
        self._oom_cap = MAX_BATCH
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self.encoder = PromptEncoder(self.tokenizer, loaded.kind)
        if self.device.type == "cpu":
            keep_freed_memory()
        self._weights = weights_provenance(loaded)
        capabilities = frozenset(Capability)
        if loaded.kind == "masked":  # a masked LM ranks at its mask; it neither generates nor scores continuations
            capabilities -= {Capability.GENERATE, Capability.LOGLIKELIHOOD}
        self.info = loaded_info(loaded, self.backend, str(self.device), self.code, capabilities, self._weights)

    # ------------------------------------------------------------------ what the model is
    backend = "hf"

    def describe(self) -> dict:
        return {
            "name": self.loaded.name,
            "identity": self.loaded.identity,
            "kind": self.loaded.kind,
            "dtype": self.loaded.dtype,
            "weights": self._weights,
        }

    def special_token_ids(self) -> frozenset[int]:
        return frozenset(self.tokenizer.all_special_ids)

    def training_weights(self) -> LoadedModel:
        """The loaded weights that xteval's soft prompts / fine-tuning and `kbench read` train."""
        return self.loaded

    # ------------------------------------------------------------------ the template's steps (`TemplateModel`)
    def _rank(
        self, prompts: list[str], golds: Sequence[str], candidate_ids: Sequence[int] | None, intervention: Realised | None
    ) -> list[Rank]:
        """(rank, logprob) of each gold's first token at the prompt's next position (mask position
        for masked LMs). rank = 1 + the number of tokens scored strictly higher, over the full
        vocabulary, or over `candidate_ids` when given (LAMA's restricted vocabulary); logprob is
        the log-softmax over the full vocabulary. One forward pass per batch, logits_to_keep=1."""
        encoded = self.encoder.rank_items(prompts, golds)
        candidates = self._candidates(candidate_ids)

        def compute(batch: list[int]) -> list[list]:
            scores = self._next_token_scores([encoded[i][0] for i in batch], [encoded[i][1] for i in batch], intervention)
            return gold_ranks(scores, [encoded[i][2] for i in batch], candidates)

        values = self._computed(list(zip(prompts, golds)), [len(e[0]) for e in encoded], compute, packed=self.packs(intervention))
        return [(int(r), float(lp)) for r, lp in values]

    def _score(
        self, prompts: list[str], answers: Sequence[str], intervention: Realised | None
    ) -> list[tuple[float, list[float]]]:
        """(sum of log-probs, per-token log-probs) of each answer continuing its prompt,
        teacher-forced in one forward pass per batch. Without an intervention, a call whose
        answers share prompts (a template's candidates) writes each prompt once with its answers
        after it, as a token tree in packed rows (`kbench.models.tree_packing`): each answer costs
        its own tokens. The values are those of full passes up to float rounding."""
        self._require_causal("score_answers")
        pairs = self.encoder.continuations(prompts, answers)
        tree = intervention is None and self._scores_trees(pairs)

        def compute(batch: list[int]) -> list[list]:
            if tree:
                conts = [pairs[i][1] for i in batch]
                built = build_tree([pairs[i][0] for i in batch], conts, self.pad_id)
                return [[sum(per), per] for per in answer_logprobs(self.network, built, conts, self.device)]
            seqs = [pairs[i][0] + pairs[i][1] for i in batch]
            answer_lengths = [len(pairs[i][1]) for i in batch]
            keep = max(answer_lengths) + 1
            input_ids, mask, positions = self.pad_left(seqs)
            with self.intervened(intervention):
                logits = self.forward(input_ids, mask, positions, logits_to_keep=keep).logits[:, :-1].float()
            width = input_ids.shape[1]
            if intervention and intervention.logits_processor:
                for j in range(keep - 1):  # position width-keep+j predicts token width-keep+j+1
                    logits[:, j] = intervention.logits_processor(input_ids[:, : width - keep + j + 1], logits[:, j])
            log_probs = logits.log_softmax(-1)
            targets = input_ids[:, width - keep + 1 :]
            token_lp = log_probs.gather(2, targets[..., None])[..., 0]
            out = []
            for row, n in enumerate(answer_lengths):
                per_token = token_lp[row, keep - 1 - n :].tolist()
                out.append([sum(per_token), per_token])
            return out

        # trees: batches cut by answer tokens (each prompt is written once per batch, in the same rows), in
        # call order within equal lengths; padded rows: by whole sequences
        lengths = [len(a) for _, a in pairs] if tree else [len(c) + len(a) for c, a in pairs]
        values = self._computed(list(zip(prompts, answers)), lengths, compute, packed=tree)
        return [(float(s), [float(x) for x in per]) for s, per in values]

    def _scores_trees(self, pairs: list[tuple[list[int], list[int]]]) -> bool:
        """Whether `score_answers` writes shared prompts once (`tree_packing`): a causal decoder whose
        layers all attend in full and which packs, under an attention that reads the tree mask (flash
        attention reads sequences off the position ids instead), and a call where prompts repeat."""
        return (
            len({tuple(c) for c, _ in pairs}) < len(pairs)
            and getattr(self.network.config, "_attn_implementation", None) in ("sdpa", "eager")
            and shares_prefixes(self.network)
            and packing_works(self.network, self.pad_id)
        )

    def _generate(self, prompts: list[str], max_new_tokens: int, stop: list[str], intervention: Realised | None) -> list[str]:
        """Greedy continuation of each prompt (KV-cached), special tokens dropped. A row stops
        at its end-of-sequence token, at `max_new_tokens`, or once its text contains a stop
        string; the text is cut before the first stop string."""
        self._require_causal("generate")
        encoded = self.encoder.encode(prompts)

        def compute(batch: list[int]) -> list[str]:
            return [rows[0] for rows in decode(self, [encoded[i] for i in batch], 1, max_new_tokens, stop, None, intervention)]

        return self._computed(
            list(prompts), [len(e) for e in encoded], compute, decode=(max_new_tokens, 1), packed=self.packs(intervention)
        )

    def _generate_and_rank(
        self,
        prompts: list[str],
        golds: Sequence[str],
        max_new_tokens: int,
        stop: list[str],
        candidate_ids: Sequence[int] | None,
        intervention: Realised | None,
    ) -> list[tuple[str, int | None, float | None]]:
        """(greedy text, rank, logprob) per prompt: `generate` and `rank_first_token` in one pass.
        The ranking reads the scores the generation prefill computes anyway, so it costs no
        forward pass of its own. Results are those of the two methods."""
        self._require_causal("generate_and_rank")
        candidates = self._candidates(candidate_ids)
        encoded = self.encoder.rank_items(prompts, golds)

        def compute(batch: list[int]) -> list[tuple[str, list]]:
            prefill: list = []  # the prefill's next-token scores (one tensor)
            texts = decode(
                self, [encoded[i][0] for i in batch], 1, max_new_tokens, stop, None, intervention, on_prefill=prefill.append
            )
            return list(zip([t[0] for t in texts], gold_ranks(prefill[0], [encoded[i][2] for i in batch], candidates)))

        values = self._computed(
            list(zip(prompts, golds)),
            [len(e[0]) for e in encoded],
            compute,
            decode=(max_new_tokens, 1),
            packed=self.packs(intervention),
        )
        return [(text, int(rank), float(logprob)) for text, (rank, logprob) in values]

    def _sample(
        self,
        prompts: list[str],
        k: int,
        temperature: float,
        seed: int,
        max_new_tokens: int,
        stop: list[str],
        intervention: Realised | None,
    ) -> list[list[str]]:
        """k sampled continuations per prompt at `temperature`, stopping as in `generate`.

        Each prompt is prefilled once; its k samples share batch rows and KV cache rows for as
        long as their tokens agree (`kbench.models.decoding`). Sample j of a prompt draws its
        uniforms from its own generator seeded by (seed, prompt, j), so results do not depend on
        batching or on the other prompts, and the first k samples of a larger k are the same.
        Each step inverts the sample's cumulative distribution at its next uniform (exact
        categorical sampling, vectorised over rows)."""
        self._require_causal("sample")
        if k < 1 or temperature <= 0:
            raise UserError(f"sample needs k >= 1 and temperature > 0 (got k={k}, temperature={temperature})")
        encoded = self.encoder.encode(prompts)

        def compute(batch: list[int]) -> list[list[str]]:
            uniforms = []
            for i in batch:
                for j in range(k):
                    gen = self.torch.Generator()
                    gen.manual_seed(int(stable_hash([seed, prompts[i], j])[:15], 16))
                    uniforms.append(self.torch.rand(max_new_tokens, generator=gen))
            steps = self.torch.stack(uniforms).to(self.device)  # [rows, max_new_tokens]
            return decode(self, [encoded[i] for i in batch], k, max_new_tokens, stop, (temperature, steps), intervention)

        return self._computed(
            list(prompts), [len(e) for e in encoded], compute, decode=(max_new_tokens, k), packed=self.packs(intervention)
        )

    # ------------------------------------------------------------------ ranking helpers
    def _candidates(self, candidate_ids: Sequence[int] | None):
        """The candidate ids as a tensor (None: the full vocabulary)."""
        if candidate_ids is None:
            return None
        return self.torch.tensor(sorted(set(candidate_ids)), device=self.device)

    def packs(self, intervention: Realised | None) -> bool:
        """Whether this call reads next-token scores from packed rows: causal LMs whose packed
        passes match unpacked ones, unless the intervention hooks into the model."""
        return (
            self.loaded.kind == "causal"
            and (intervention is None or intervention.hooks is None)
            and packing_works(self.network, self.pad_id)
        )

    # ------------------------------------------------------------------ forward passes
    # The Hugging Face backend's own primitives, public for its decoding loop (`decoding.py`):
    # `pad_left` (ids, mask, positions of left-padded rows), `forward` (one pass, optionally on a KV
    # cache), `intervened` (the intervention's hooks around the passes), `packs` (whether this call
    # reads packed rows). Other backends need not have them; tasks use the LanguageModel methods.
    def pad_left(self, seqs: list[list[int]]):
        return pad_left(seqs, self.pad_id, self.device)

    def forward(self, input_ids, mask, positions, cache=None, logits_to_keep: int = 1):
        kwargs: dict[str, Any] = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "position_ids": positions,
            "logits_to_keep": logits_to_keep,
        }
        if cache is not None:
            kwargs.update(cache=cache, use_cache=True)
        else:
            kwargs["use_cache"] = False
        return self.network(**kwargs)

    def _next_token_scores(self, seqs: list[list[int]], read_at: list[int | None], intervention: Realised | None):
        """[B, V] float32 scores at the next position (causal) or at `read_at` (masked)."""
        torch = self.torch
        if self.packs(intervention):
            scores = last_token_logits(self.network, pack(self.network, seqs, self.pad_id, self.device))
            input_ids = self.pad_left(seqs)[0] if intervention and intervention.logits_processor else None
        elif self.loaded.kind == "causal":
            input_ids, mask, positions = self.pad_left(seqs)
            with self.intervened(intervention):
                scores = self.forward(input_ids, mask, positions).logits[:, -1].float()
        else:  # masked LMs use absolute positions from 0, so pad on the right
            input_ids, mask = pad_right(seqs, self.pad_id, self.device)
            with self.intervened(intervention):
                logits = self.network(input_ids=input_ids, attention_mask=mask).logits
            rows = torch.arange(len(seqs), device=self.device)
            scores = logits[rows, torch.tensor(read_at, device=self.device)].float()
        if intervention and intervention.logits_processor:
            scores = intervention.logits_processor(input_ids, scores)
        return scores

    def intervened(self, intervention: Realised | None):
        if intervention is None or intervention.hooks is None:
            return contextlib.nullcontext()
        return intervention.hooks(self.network)

    def _checked(self, intervention: Intervention | Realised | None) -> Realised | None:
        """The call's intervention carried out on this network (once per call)."""
        if intervention is None or isinstance(intervention, Realised):
            return intervention
        return realise(self.network, self.pad_id, intervention)

    def _require_causal(self, method: str) -> None:
        if self.loaded.kind != "causal":
            raise UserError(f"{method} needs a causal LM; {self.loaded.name} is a {self.loaded.kind} LM")


@register_backend("hf", Capability)
def open_hf_model(spec) -> ModelRunner:
    """The Hugging Face backend: load the weights (`kbench.models.loading`) and wrap them in the
    batched runner."""
    from kbench.models.loading import load_model

    if spec.batch_size is not None and spec.batch_size < 1:
        raise UserError(f"--batch-size must be >= 1, got {spec.batch_size}")
    loaded = load_model(spec.name, dtype=spec.dtype, device=spec.device, trust_remote_code=spec.trust_remote_code)
    return ModelRunner(loaded, batch_size=spec.batch_size)
