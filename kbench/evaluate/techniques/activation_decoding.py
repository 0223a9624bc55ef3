"""Activation Decoding (Chen et al., 2024, "In-Context Sharpness as Alerts: An Inner
Representation Perspective for Hallucination Mitigation"; as configured in MAPLE, Appendix B).

Idea: a token the model really "knows" is activated sharply at a few context positions of an
intermediate layer; a hallucinated one is activated diffusely. Formula used here, for each
decoding step over the real context tokens i = 1..n (prompt and generated so far):

    P_i      = softmax(lm_head(final_norm(h_i^(l))))       early-exit distribution at layer l
    q_i(v)   = P_i(v) / sum_j P_j(v)                        where token v is activated, over positions
    H(v)     = -sum_i q_i(v) log q_i(v)                     in-context entropy (low = sharp)
    score(v) = log_softmax(final logits)(v) - alpha * H(v)

l is the layer at 81.25% of the depth (layer 26 of 32 in the paper): the output of decoder
block round(0.8125 * L) - 1, i.e. hidden_states[round(0.8125 * L)]. The entropy needs every
position's layer-l state, so each step recomputes the prefix; answers are short.

Parameters: alpha = 0.5, depth = 0.8125.
"""

from __future__ import annotations

from kbench.evaluate.techniques import register_technique
from kbench.evaluate.techniques.base import Technique, greedy_answers
from kbench.evaluate.techniques.fitting import forward_padded, real_token_mask
from kbench.io import stable_hash
from kbench.models import hooks
from kbench.models.runner import Intervention


def info_layer(num_layers: int, depth: float = 0.8125) -> int:
    """Index of the decoder block whose output is hidden_states[round(depth * num_layers)]."""
    return max(0, min(num_layers - 1, round(depth * num_layers) - 1))


def in_context_entropy(model, input_ids, mask, layer: int):
    """(batch, vocab) entropy over real positions of where each token is activated at `layer`."""
    import torch

    with hooks.capture_residual(model, [layer]) as seen:
        forward_padded(model, input_ids, mask, logits_to_keep=1)
    hidden = seen[layer]
    norm, head = model.model.norm, model.get_output_embeddings()
    rows = []
    for row in range(hidden.shape[0]):  # one row at a time: (positions, vocab) is large
        states = hidden[row][mask[row].bool()]
        probs = head(norm(states)).float().softmax(-1)
        q = probs / probs.sum(0, keepdim=True).clamp_min(1e-30)
        rows.append(-(q * q.clamp_min(1e-30).log()).sum(0))
    return torch.stack(rows)


def sharpness_processor(model, pad_id: int, layer: int, alpha: float):
    import torch

    def processor(input_ids, scores):
        mask = real_token_mask(input_ids, pad_id)
        entropy = in_context_entropy(model, input_ids, mask, layer)
        return scores.log_softmax(-1) - alpha * entropy

    return torch.no_grad()(processor)


@register_technique("activation_decoding")
class ActivationDecoding(Technique):
    family = "decoding"

    def __init__(self, alpha: float = 0.5, depth: float = 0.8125):
        self.alpha, self.depth = alpha, depth

    def params(self):
        return {"alpha": self.alpha, "depth": self.depth}

    def run(self, context, items):
        model = context.runner.model
        layer = info_layer(hooks.head_layout(model).num_layers, self.depth)
        intervention = Intervention(key=stable_hash(["activation_decoding", self.params(), layer]),
                                    logits_processor=sharpness_processor(model, context.runner.pad_id, layer, self.alpha))
        return greedy_answers(context, [context.answer_prompt(i.question) for i in items], items, intervention,
                              detail=[{"info_layer": layer} for _ in items])
