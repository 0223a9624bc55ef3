"""How the Hugging Face backend carries out an `Intervention` (data) on its network.

`realise(runner, intervention)` turns the data into what the runner's forward passes use:
`hooks(network)`, a context manager entered around every forward pass of the call (steering
vectors, head shifts: `kbench.models.hooks`), and `logits_processor(input_ids, scores) ->
scores` with input_ids [B, T] left padded with the pad id and scores [B, V] float32, applied
wherever the runner reads next-token scores. One realisation serves one call, so a processor's
memo (the prompt entropies) lives exactly as long as the call.

The formulas of the logits recipes (DeCoRe's contrast, Activation Decoding's in-context entropy)
are here, where they run; the techniques' modules say where they come from.
"""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kbench.models import hooks
from kbench.models.decoding import truncate
from kbench.models.interface import (
    ActivationEntropy,
    HeadShift,
    Intervention,
    MaskedHeadContrast,
    SamplingTruncation,
    Steering,
)
from kbench.models.padding import pad_left, real_token_mask, unpad_left

ENTROPY_CACHE = 512  # prompts whose (vocab,) entropy stays in memory; others are recomputed


@dataclass(frozen=True)
class Realised:
    key: str
    hooks: Callable[[Any], contextlib.AbstractContextManager] | None = None
    logits_processor: Callable[[Any, Any], Any] | None = None


def realise(network, pad_id: int, intervention: Intervention | None) -> Realised | None:
    if intervention is None:
        return None
    edit_hooks = _edit_hooks(intervention.edits) if intervention.edits else None
    recipe = intervention.logits
    processor = None
    if isinstance(recipe, SamplingTruncation):
        processor = lambda _ids, scores: truncate(scores, recipe.temperature, recipe.top_k, recipe.top_p)  # noqa: E731
    elif isinstance(recipe, MaskedHeadContrast):
        processor = masked_head_contrast(network, pad_id, recipe)
    elif isinstance(recipe, ActivationEntropy):
        processor = activation_entropy(network, pad_id, recipe)
    return Realised(intervention.key, edit_hooks, processor)


def _edit_hooks(edits) -> Callable[[Any], contextlib.AbstractContextManager]:
    def enter(network):
        stack = contextlib.ExitStack()
        for edit in edits:
            if isinstance(edit, Steering):
                stack.enter_context(hooks.add_to_residual(network, edit.layer, edit.vector, edit.multiplier, edit.last_only))
            elif isinstance(edit, HeadShift):
                stack.enter_context(hooks.shift_heads(network, edit.shifts, edit.last_only))
            else:
                raise TypeError(f"unknown intervention edit {edit!r}")
        return stack

    return enter


# ---------------------------------------------------------------- DeCoRe
def contrast(base_logits, masked_logits, alpha_cap: float | None = None):
    """DeCoRe_entropy on [B, V] raw logits: (1 + a) · base − a · masked, a = entropy (nats) of
    softmax(base) per row, capped at alpha_cap when given."""
    log_probs = base_logits.log_softmax(-1)
    alpha = -(log_probs.exp() * log_probs).sum(-1, keepdim=True)
    if alpha_cap is not None:
        alpha = alpha.clamp(max=alpha_cap)
    return (1 + alpha) * base_logits - alpha * masked_logits


def masked_head_contrast(network, pad_id: int, recipe: MaskedHeadContrast):
    """`contrast` of the scores with the logits of the network with the recipe's heads masked;
    the masked pass recomputes the whole prefix each step (answers are short)."""
    import torch

    def processor(input_ids, scores):
        mask = real_token_mask(input_ids, pad_id)
        positions = (mask.cumsum(1) - 1).clamp(min=0)
        with hooks.mask_heads(network, recipe.heads):
            out = network(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=False, logits_to_keep=1)
        return contrast(scores, out.logits[:, -1].float(), recipe.alpha_cap)

    return torch.no_grad()(processor)


# ---------------------------------------------------------------- Activation Decoding
def in_context_entropy(info_logits):
    """(vocab,) entropy over positions of softmax over positions: info_logits (positions, vocab)."""
    log_q = info_logits.float().log_softmax(0)
    return -(log_q.exp() * log_q).sum(0)


def sharpness_scores(final_logits, entropy, alpha: float, relative_top: float):
    """[B, V] Activation Decoding scores from final logits [B, V] and entropies [B, V]: the
    log-probability minus alpha · H; tokens below relative_top · (max probability) sit below
    every plausible token (shifted down by the row's score range + 1, order kept)."""
    scores = final_logits.log_softmax(-1) - alpha * entropy
    if relative_top <= 0:
        return scores
    log_probs = final_logits.log_softmax(-1)
    implausible = log_probs < log_probs.amax(-1, keepdim=True) + math.log(relative_top)
    span = scores.amax(-1, keepdim=True) - scores.amin(-1, keepdim=True) + 1
    return scores - implausible * span


class PromptEntropies:
    """H(v) of each row's prompt. The prompt of a row is the longest prompt seen so far that
    begins the row's real tokens; a row that begins with no seen prompt is a prompt (the runner
    passes prompts first, then prompts + generated tokens)."""

    def __init__(self, network, pad_id: int, layer: int, final_norm: bool):
        self.network, self.pad_id, self.layer, self.final_norm = network, pad_id, layer, final_norm
        self.prompts: set[tuple[int, ...]] = set()
        self.lengths: list[int] = []  # distinct prompt lengths, longest first
        self.cache: OrderedDict[tuple[int, ...], object] = OrderedDict()

    def prompt_of(self, tokens: list[int]) -> tuple[int, ...]:
        for length in self.lengths:
            if length <= len(tokens) and tuple(tokens[:length]) in self.prompts:
                return tuple(tokens[:length])
        prompt = tuple(tokens)
        self.prompts.add(prompt)
        self.lengths = sorted({*self.lengths, len(prompt)}, reverse=True)
        return prompt

    def __call__(self, input_ids):
        import torch

        prompts = [self.prompt_of(tokens) for tokens in unpad_left(input_ids, self.pad_id)]
        missing = list(dict.fromkeys(p for p in prompts if p not in self.cache))
        if missing:
            self._compute(missing, input_ids.device)
        out = []
        for prompt in prompts:
            self.cache.move_to_end(prompt)
            out.append(self.cache[prompt])
        while len(self.cache) > max(ENTROPY_CACHE, len(set(prompts))):
            self.cache.popitem(last=False)
        return torch.stack(out)

    def _compute(self, prompts: list[tuple[int, ...]], device) -> None:
        ids, mask, positions = pad_left(prompts, self.pad_id, device)
        width = ids.shape[1]
        with hooks.capture_residual(self.network, [self.layer]) as seen:
            self.network(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False, logits_to_keep=1)
        head = self.network.get_output_embeddings()
        for row, prompt in enumerate(prompts):  # one row at a time: (positions, vocab) is large
            states = seen[self.layer][row, width - len(prompt) :]
            if self.final_norm:
                states = self.network.model.norm(states)
            self.cache[prompt] = in_context_entropy(head(states))


def activation_entropy(network, pad_id: int, recipe: ActivationEntropy):
    import torch

    entropies = PromptEntropies(network, pad_id, recipe.layer, recipe.final_norm)

    def processor(input_ids, scores):
        return sharpness_scores(scores, entropies(input_ids), recipe.alpha, recipe.relative_top)

    return torch.no_grad()(processor)
