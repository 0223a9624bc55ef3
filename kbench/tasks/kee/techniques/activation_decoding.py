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
order, so greedy decoding is the reference's and the gold's rank stays defined for PRS. The
technique asks for this as data (`ActivationEntropy`); the backend computes it
(`kbench.models.interventions`: `in_context_entropy`, `sharpness_scores`, `PromptEntropies`).

l is the layer at 81.25% of the depth (layer 26 of 32 in the paper): hidden_states[round(0.8125
· L)], the output of decoder block round(0.8125 · L) - 1.

Parameters: alpha = 0.5, depth = 0.8125, relative_top = 0.1, final_norm = false.
"""

from __future__ import annotations

from pydantic import Field

from kbench.io import stable_hash
from kbench.models.interface import ActivationEntropy, Capability, Intervention
from kbench.protocol import Deviation
from kbench.tasks.kee.techniques import register_technique
from kbench.tasks.kee.techniques.base import Technique, TechniqueParams, greedy_answers

#: (paper's value, what the paper does) per parameter: MAPLE's alpha and depth, the reference code's others
PAPER = {
    "alpha": (0.5, "alpha = 0.5 (the weight of the entropy)"),
    "depth": (0.8125, "the info layer at 81.25% of the depth"),
    "relative_top": (0.1, "DoLa's plausibility constraint at relative_top = 0.1 (the reference code)"),
    "final_norm": (False, "no final norm before lm_head on the info layer (the reference code)"),
}


def info_layer(num_layers: int, depth: float = 0.8125) -> int:
    """Index of the decoder block whose output is hidden_states[round(depth * num_layers)]."""
    return max(0, min(num_layers - 1, round(depth * num_layers) - 1))


class ActivationDecodingParams(TechniqueParams):
    alpha: float = Field(0.5, ge=0)  # weight of the entropy (MAPLE: 0.5)
    depth: float = Field(0.8125, gt=0, le=1)  # info layer as a share of the depth (layer 26 of 32)
    relative_top: float = Field(0.1, ge=0, lt=1)  # plausibility: p >= this · max p (0: off)
    final_norm: bool = False  # final norm before lm_head (the reference: none)


@register_technique("activation_decoding")
class ActivationDecoding(Technique):
    family = "decoding"
    Params = ActivationDecodingParams
    needs = frozenset({Capability.WHITE_BOX, Capability.GENERATE})

    def deviations(self, fitted):
        values = self.params()
        return [
            Deviation(
                f"activation-decoding-{key.replace('_', '-')}",
                paper=paper,
                kbench=f"{key} = {values[key]}",
                effect="activation_decoding: every number",
            )
            for key, (default, paper) in PAPER.items()
            if values[key] != default
        ]

    def run(self, context, items):
        p = self.p
        layer = info_layer(context.model.layout().num_layers, p.depth)
        intervention = Intervention(
            key=stable_hash(["activation_decoding", 2, self.params(), layer]),
            logits=ActivationEntropy(layer, p.alpha, p.relative_top, p.final_norm),
        )
        fit = {"info_layer": layer, "hidden_states_index": layer + 1, "positions": "prompt tokens"}
        return greedy_answers(
            context, [context.answer_prompt(i.question) for i in items], items, intervention, detail=[{"fit": fit} for _ in items]
        )
