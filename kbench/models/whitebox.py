"""The Hugging Face backend's white-box methods (`WhiteBoxModel`): layout, activations, ranks
under several last-position edits (CAA's layer sweep), attention.

Mixed into `ModelRunner`, so they share its tokenisation and its batching: `activations` cuts
the texts into the runner's batches (longest first, a token budget per pass, halved on
out-of-memory). Texts that share token prefixes (a chat template's system prompt, ITI's true and
false statements of one prompt) run each shared prefix once into a KV cache and only what
differs after it (`kbench.models.shared_prefix`), when that saves a quarter of the tokens; other
calls read packed rows (several texts per row, no padding: `kbench.models.packing`) where the
network packs, else left-padded rows. All three give the same values up to float rounding, and
which one a call takes depends on its texts alone. The capture hooks gather only the texts' last
positions, so a pass never keeps a whole residual stream.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence
from typing import Any

from kbench.errors import UserError
from kbench.models import hooks
from kbench.models.batching import BatchingMethods
from kbench.models.encoding import PromptEncoder
from kbench.models.interface import ACTIVATION_SITES, Intervention, NetworkLayout
from kbench.models.packing import last_token_logits, pack
from kbench.models.padding import pad_left
from kbench.models.prompt import Prompt, render_texts
from kbench.models.ranking import gold_ranks
from kbench.models.shared_prefix import common_length, run_levels, shared_tokens, shares_prefixes

_CAPTURE = {"residual": hooks.capture_residual, "heads": hooks.capture_head_inputs}


class WhiteBoxMethods(BatchingMethods):
    """On the host's batching; needs from its host (`ModelRunner`) the attributes and methods declared here."""

    tokenizer: Any
    loaded: Any
    pad_id: int
    encoder: PromptEncoder
    forward: Callable[..., Any]  # one pass, optionally on a KV cache
    packs: Callable[[Any], bool]
    intervened: Callable[[Any], Any]
    _checked: Callable[[Intervention | None], Any]
    rank_first_token: Callable[..., list]

    def layout(self) -> NetworkLayout:
        return hooks.head_layout(self.network)

    def activations(self, texts: Sequence[Prompt | str], site: str, layers: Sequence[int]):
        """[texts, len(layers), ...] float32 activations at each text's last token (see `WhiteBoxModel`)."""
        texts = render_texts(texts, self.tokenizer)
        if site not in ACTIVATION_SITES:
            raise UserError(f"unknown activation site {site!r}; choose one of {', '.join(ACTIVATION_SITES)}")
        layers = list(layers)
        encoded = self.encoder.encode(texts)
        shared = self._shares_prefixes(encoded)
        packed = not shared and self.packs(None)

        def compute(batch: list[int]) -> list:
            seqs = [encoded[i] for i in batch]
            if shared:
                at = (self.torch.arange(len(seqs), device=self.device), self.torch.full((len(seqs),), -1, device=self.device))
                capture = functools.partial(_CAPTURE[site], self.network, layers, at=at)
                seen = run_levels(self.forward, seqs, self.pad_id, self.device, capture)
            elif packed:
                packed_rows = pack(self.network, seqs, self.pad_id, self.device)
                at = (
                    self.torch.tensor([row for row, _, _ in packed_rows.spans], device=self.device),
                    self.torch.tensor([start + n - 1 for _, start, n in packed_rows.spans], device=self.device),
                )
                with _CAPTURE[site](self.network, layers, at=at) as seen:
                    last_token_logits(self.network, packed_rows)
            else:
                input_ids, mask, positions = pad_left(seqs, self.pad_id, self.device)
                at = (
                    self.torch.arange(len(seqs), device=self.device),
                    self.torch.full((len(seqs),), input_ids.shape[1] - 1, device=self.device),
                )
                with _CAPTURE[site](self.network, layers, at=at) as seen:
                    self.forward(input_ids, mask, positions)
            stacked = self.torch.stack([seen[layer] for layer in layers], 1).float().cpu()  # (batch, layers, ...)
            return list(stacked)

        lengths = [len(e) for e in encoded]
        if shared and self.device.type == "cpu":
            # CPU batches are cut by the tokens they compute (CPU_PACKED_TOKENS), not counting the call's
            # common prefix; elsewhere by full lengths, which the free-memory estimate needs (each row holds
            # its whole prefix's KV cache)
            common = common_length(encoded)
            lengths = [n - common for n in lengths]
        values = self._computed(list(texts), lengths, compute, packed=packed or shared)
        return self.torch.stack(values) if values else self.torch.zeros((0, len(layers)))

    def _shares_prefixes(self, encoded: list[list[int]]) -> bool:
        """Whether this call runs its texts' shared prefixes once (`kbench.models.shared_prefix`):
        a causal decoder that can, and texts whose shared prefixes save a quarter of the tokens."""
        return (
            self.loaded.kind == "causal"
            and len(encoded) > 1
            and all(encoded)
            and shares_prefixes(self.network)
            and shared_tokens(encoded) <= 0.75 * sum(len(e) for e in encoded)
        )

    def rank_first_token_each(self, prompts: Sequence[Prompt | str], golds: Sequence[str], interventions: Sequence[Intervention]):
        """[per intervention: [(rank, logprob) per prompt]], each intervention editing the last
        position only (`last_only` edits, no logits recipe). Such an edit leaves every earlier
        position as it was, so each batch's prefixes (all tokens but the last) run once into a KV
        cache and only the last token is run again under each intervention: a sweep over CAA's
        layers costs one pass plus one token per layer, not one pass per layer."""
        prompts = render_texts(prompts, self.tokenizer)
        realised = [self._checked(i) for i in interventions]
        if any(i.logits is not None or not all(e.last_only for e in i.edits) for i in interventions):
            raise UserError("rank_first_token_each takes interventions that edit only the last position")
        encoded = self.encoder.rank_items(prompts, golds)
        if self.loaded.kind != "causal" or min((len(e[0]) for e in encoded), default=2) < 2:
            return [self.rank_first_token(prompts, golds, intervention=i) for i in interventions]

        def compute(batch: list[int]) -> list:
            from transformers.cache_utils import Cache, DynamicLayer

            seqs = [encoded[i][0] for i in batch]
            input_ids, mask, positions = pad_left([s[:-1] for s in seqs], self.pad_id, self.device)
            prefix = Cache(layer_class_to_replicate=DynamicLayer)
            self.forward(input_ids, mask, positions, cache=prefix)
            last = self.torch.tensor([[s[-1]] for s in seqs], device=self.device)
            mask = self.torch.cat([mask, self.torch.ones_like(last)], 1)
            at = mask[:, :-1].sum(1, keepdim=True)
            per_intervention = []
            for intervention in realised:
                with self.intervened(intervention):
                    scores = self.forward(last, mask, at, cache=copy.deepcopy(prefix)).logits[:, -1].float()
                per_intervention.append(gold_ranks(scores, [encoded[i][2] for i in batch], None))
            return [[tuple(ranks[row]) for ranks in per_intervention] for row in range(len(batch))]

        values = self._computed(list(zip(prompts, golds)), [len(e[0]) for e in encoded], compute)
        return [[(int(v[n][0]), float(v[n][1])) for v in values] for n in range(len(interventions))]

    def strongest_attention(self, sequences: Sequence[Sequence[int]], queries: Sequence[int]):
        """[sequences, layers, heads, queries] argmax source position of each head's attention
        from each query. The sequences run in the runner's batches, left-padded (a sequence's
        positions sit `offset` columns right), with eager attention (the only kind that returns
        its weights); each block's weights are reduced to the argmax at once (`hooks.strongest_sources`)
        and only the last position's logits are computed."""
        torch, network = self.torch, self.network
        seqs = [tuple(int(t) for t in s) for s in sequences]
        queries = torch.tensor(list(queries), device=self.device)

        def compute(batch: list[int]) -> list:
            input_ids, mask, positions = pad_left([seqs[i] for i in batch], self.pad_id, self.device)
            offsets = (input_ids.shape[1] - mask.sum(1))[:, None]  # (rows, 1) pads before each sequence
            with hooks.strongest_sources(network, offsets + queries) as seen:
                self.forward(input_ids, mask, positions)
            return list((torch.stack(seen, 1) - offsets.view(-1, 1, 1, 1)).cpu())  # (rows, layers, heads, queries)

        previous = network.config._attn_implementation
        network.set_attn_implementation("eager")
        try:
            values = self._computed(seqs, [len(s) for s in seqs], compute)
        finally:
            network.set_attn_implementation(previous)
        return torch.stack(values) if values else torch.zeros((0, 0, 0, len(queries)), dtype=torch.long)
