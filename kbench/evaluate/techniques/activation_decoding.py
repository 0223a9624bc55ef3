"""Activation Decoding (Chen et al., 2024, "In-Context Sharpness as Alerts: An Inner
Representation Perspective for Hallucination Mitigation"; as configured in MAPLE, Appendix B).

Idea: a token the model really "knows" is activated sharply at a few context positions of an
intermediate layer; a hallucinated one is activated diffusely. As in the reference code
(hkust-nlp/Activation_Decoding, `activation_greedy_decode`, decoding_strategy "entropy"):

    z_i      = lm_head(h_i^(l))                      info-layer logits of prompt position i
                                                      (no final norm, as the reference; option)
    q_i(v)   = exp(z_i(v)) / sum_j exp(z_j(v))       softmax over the prompt positions, per token v
    H(v)     = -sum_i q_i(v) log q_i(v)              in-context entropy (low = sharp)
    score(v) = log_softmax(final logits)(v) - alpha * H(v)    for plausible v

The positions i are the prompt's tokens (every real token of the answer prompt, template and
BOS included), and H is computed once per prompt and reused at every decoding step, as the
reference does at the first generated token. Plausible tokens: DoLa's adaptive constraint
with relative_top = 0.1 (the reference default), p(v) >= 0.1 · max p; the reference sets the
other tokens to -inf. Here they are placed below every plausible token, in their own score
order, so greedy decoding is the reference's and the gold's rank stays defined for PRS
(`sharpness_scores`).

l is the layer at 81.25% of the depth (layer 26 of 32 in the paper): hidden_states[round(0.8125
· L)], the output of decoder block round(0.8125 · L) - 1.

Parameters: alpha = 0.5, depth = 0.8125, relative_top = 0.1, final_norm = false.
"""

from __future__ import annotations

import math
from collections import OrderedDict

from pydantic import Field

from kbench.evaluate.techniques import register_technique
from kbench.evaluate.techniques.base import Technique, TechniqueParams, greedy_answers
from kbench.evaluate.techniques.fitting import forward_padded, real_token_mask
from kbench.io import stable_hash
from kbench.models import hooks
from kbench.models.interface import Intervention

ENTROPY_CACHE = 512  # prompts whose (vocab,) entropy stays in memory; others are recomputed


def info_layer(num_layers: int, depth: float = 0.8125) -> int:
    """Index of the decoder block whose output is hidden_states[round(depth * num_layers)]."""
    return max(0, min(num_layers - 1, round(depth * num_layers) - 1))


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

    def __init__(self, model, pad_id: int, layer: int, final_norm: bool):
        self.model, self.pad_id, self.layer, self.final_norm = model, pad_id, layer, final_norm
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

        mask = real_token_mask(input_ids, self.pad_id)
        prompts = [self.prompt_of(row[m.bool()].tolist()) for row, m in zip(input_ids, mask)]
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
        import torch

        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long, device=device)
        mask = torch.zeros_like(ids)
        for row, prompt in enumerate(prompts):
            ids[row, width - len(prompt) :] = torch.tensor(prompt, device=device)
            mask[row, width - len(prompt) :] = 1
        with hooks.capture_residual(self.model, [self.layer]) as seen:
            forward_padded(self.model, ids, mask, logits_to_keep=1)
        head = self.model.get_output_embeddings()
        for row, prompt in enumerate(prompts):  # one row at a time: (positions, vocab) is large
            states = seen[self.layer][row, width - len(prompt) :]
            if self.final_norm:
                states = self.model.model.norm(states)
            self.cache[prompt] = in_context_entropy(head(states))


def sharpness_processor(model, pad_id: int, layer: int, alpha: float, relative_top: float, final_norm: bool):
    import torch

    entropies = PromptEntropies(model, pad_id, layer, final_norm)

    def processor(input_ids, scores):
        return sharpness_scores(scores, entropies(input_ids), alpha, relative_top)

    return torch.no_grad()(processor)


class ActivationDecodingParams(TechniqueParams):
    alpha: float = Field(0.5, ge=0)  # weight of the entropy (MAPLE: 0.5)
    depth: float = Field(0.8125, gt=0, le=1)  # info layer as a share of the depth (layer 26 of 32)
    relative_top: float = Field(0.1, ge=0, lt=1)  # plausibility: p >= this · max p (0: off)
    final_norm: bool = False  # final norm before lm_head (the reference: none)


@register_technique("activation_decoding")
class ActivationDecoding(Technique):
    family = "decoding"
    Params = ActivationDecodingParams

    def run(self, context, items):
        p, model = self.p, context.runner.model
        layer = info_layer(hooks.head_layout(model).num_layers, p.depth)
        intervention = Intervention(
            key=stable_hash(["activation_decoding", 2, self.params(), layer]),
            logits_processor=sharpness_processor(model, context.runner.pad_id, layer, p.alpha, p.relative_top, p.final_norm),
        )
        fit = {"info_layer": layer, "hidden_states_index": layer + 1, "positions": "prompt tokens"}
        return greedy_answers(
            context, [context.answer_prompt(i.question) for i in items], items, intervention, detail=[{"fit": fit} for _ in items]
        )
