"""CAA: Contrastive Activation Addition (Rimsky et al., 2024, "Steering Llama 2 via Contrastive
Activation Addition"; as configured in MAPLE, Appendix B).

Steering vector at layer l: the mean residual-stream activation (output of decoder block l, at
the last token) over true statements (answer prompt + " " + gold) minus the mean over false
statements (answer prompt + another item's answer). At inference the vector times the
multiplier is added to block l's output from the end of the prompt on (the prompt's last token,
then every generated token), as CAA steers only the positions after the instruction.

Layer choice (MAPLE / CAA): within each fitting pool, 80% builds one vector per layer and the
held-out 20% (at most `select_limit` items, which bounds the sweep's cost to layers × 20
prompts) picks the layer with the largest mean change Δp of the gold first token's probability
under steering. Folds as in `fitting.py`, so no item is answered with a vector
built from itself.

Parameters: multiplier = 1.0, held_out = 0.2, select_limit = 20, candidate layers = all.
"""

from __future__ import annotations

import math

from kbench.evaluate.techniques import register_technique
from kbench.evaluate.techniques.base import Technique, greedy_answers
from kbench.evaluate.techniques.fitting import (FitStore, contrast_texts, fitting_plan, last_token_activations,
                                                split_pool)
from kbench.io import stable_hash
from kbench.models import hooks
from kbench.models.runner import Intervention


def steering(layer: int, vector, multiplier: float) -> Intervention:
    key = stable_hash(["caa", "last", layer, multiplier, vector.tolist()])
    return Intervention(key=key, hooks=lambda model: hooks.add_to_residual(model, layer, vector, multiplier,
                                                                         last_only=True))


@register_technique("caa")
class CAA(Technique):
    family = "steering"

    def __init__(self, multiplier: float = 1.0, held_out: float = 0.2, select_limit: int = 20):
        self.multiplier, self.held_out, self.select_limit = multiplier, held_out, select_limit

    def params(self):
        return {"multiplier": self.multiplier, "held_out": self.held_out, "select_limit": self.select_limit}

    def fit(self, context, pool):
        """(layer, vector) fitted on `pool`; cached in the run's fit folder."""
        import torch

        runner = context.runner
        store = FitStore(context.fit_dir)
        key = {"model": runner.loaded.identity, **self.params(), "pool": sorted(i.id for i in pool)}
        found = store.load("caa", key)
        if found is not None:
            return int(found[1]["layer"]), found[0]["vector"]
        build, select = split_pool(pool, self.held_out)
        select = select[: self.select_limit]
        true, false = contrast_texts(context, build, pool)
        if not true:
            raise ValueError("CAA needs at least two items with different answers in each fitting pool")
        layers = list(range(hooks.head_layout(runner.model).num_layers))
        read = lambda seen: torch.stack([seen[l] for l in layers], 2)  # noqa: E731  (batch, seq, layers, hidden)
        capture = lambda model: hooks.capture_residual(model, layers)  # noqa: E731
        vectors = (last_token_activations(runner, true, capture, read).mean(0)
                   - last_token_activations(runner, false, capture, read).mean(0))
        best_layer, best_gain = layers[0], -math.inf
        if select:
            prompts = [context.answer_prompt(i.question) for i in select]
            golds = [context.gold(i) for i in select]
            base = [math.exp(lp) for _, lp in runner.rank_first_token(prompts, golds)]
            for layer in layers:
                steered = runner.rank_first_token(prompts, golds,
                                                  intervention=steering(layer, vectors[layer], self.multiplier))
                gain = sum(math.exp(lp) - b for (_, lp), b in zip(steered, base)) / len(select)
                if gain > best_gain:
                    best_layer, best_gain = layer, gain
        store.save("caa", key, {"vector": vectors[best_layer]}, {"layer": best_layer, "delta_p": best_gain if select else None})
        return best_layer, vectors[best_layer]

    def run(self, context, items):
        outputs = {}
        for pool, answered in fitting_plan(context, items):
            layer, vector = self.fit(context, pool)
            prompts = [context.answer_prompt(i.question) for i in answered]
            results = greedy_answers(context, prompts, answered, steering(layer, vector, self.multiplier),
                                     detail=[{"layer": layer} for _ in answered])
            outputs.update({i.id: r for i, r in zip(answered, results)})
        return [outputs[i.id] for i in items]
