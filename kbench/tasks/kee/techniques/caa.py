"""CAA: Contrastive Activation Addition (Rimsky et al., 2024, "Steering Llama 2 via Contrastive
Activation Addition"; as configured in MAPLE, Appendix B).

Steering vector at layer l (`mean_difference`): the mean residual-stream activation (output of
decoder block l, i.e. hidden_states[l + 1], at the last token) over true statements (answer
prompt + " " + gold) minus the mean over false statements (answer prompt + another item's
answer). At inference the vector times the multiplier is added to block l's output from the end
of the prompt on (the prompt's last token, then every generated token), as CAA steers only the
positions after the instruction.

Layer choice (MAPLE / CAA, `best_layer`): within each fitting pool, 80% builds one vector per
layer and the held-out 20% picks the layer with the largest mean change Δp of the gold first
token's probability under steering (ties: the lowest layer). Folds as in `fitting.py`, so no
item is answered with a vector built from itself. MAPLE fits on all 3,254 facts of its pool
before corpus filtering, in two folds; the KEE settings' fit pool defaults to that size, and
each fold's record (pool, build and select sizes, layer, Δp) goes into the results.

Parameters: multiplier = 1.0, held_out = 0.2, select_limit = None (every held-out item; a
number caps the layer sweep at layers × that many prompts), candidate layers = all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import Field

from kbench.io import stable_hash
from kbench.models.interface import Capability, Intervention, Steering
from kbench.progress import progress
from kbench.protocol import Deviation
from kbench.tasks.kee.techniques import register_technique
from kbench.tasks.kee.techniques.base import Technique, TechniqueParams, greedy_answers
from kbench.tasks.kee.techniques.fitting import FitStore, contrast_texts, fitting_plan, split_pool


def steering(layer: int, vector, multiplier: float) -> Intervention:
    key = stable_hash(["caa", "last", layer, multiplier, vector.tolist()])
    return Intervention(key=key, edits=(Steering(layer, vector, multiplier, last_only=True),))


def mean_difference(true_acts, false_acts):
    """CAA's steering vectors: mean over true statements minus mean over false ones, per layer.
    true_acts / false_acts: (statements, layers, hidden) -> (layers, hidden)."""
    return true_acts.mean(0) - false_acts.mean(0)


def best_layer(base_probs: Sequence[float], steered_probs: Mapping[int, Sequence[float]]) -> tuple[int, float]:
    """(layer, Δp): the layer whose steering raises the gold first token's probability most on
    average over the held-out items, Δp = mean(p_steered − p_base); ties go to the lowest layer."""
    best, best_gain = None, None
    for layer in sorted(steered_probs):
        gain = sum(s - b for s, b in zip(steered_probs[layer], base_probs)) / len(base_probs)
        if best_gain is None or gain > best_gain:
            best, best_gain = layer, gain
    if best is None or best_gain is None:
        raise ValueError("best_layer needs at least one steered layer")
    return best, best_gain


MAPLE_MULTIPLIER, MAPLE_HELD_OUT = 1.0, 0.2


class CAAParams(TechniqueParams):
    multiplier: float = MAPLE_MULTIPLIER  # steering strength (MAPLE: 1.0)
    held_out: float = Field(MAPLE_HELD_OUT, gt=0, lt=1)  # share of each fold that selects the layer
    select_limit: int | None = Field(None, ge=1)  # cap on held-out items in the sweep (None: all)


@register_technique("caa")
class CAA(Technique):
    family = "steering"
    Params = CAAParams
    p: CAAParams  # the validated settings (`Technique.__init__`)
    needs = frozenset({Capability.WHITE_BOX, Capability.GENERATE})

    def deviations(self, fitted):
        p, out = self.p, []
        if p.multiplier != MAPLE_MULTIPLIER:
            out.append(
                Deviation(
                    "caa-multiplier",
                    paper=f"steering multiplier {MAPLE_MULTIPLIER}",
                    kbench=f"multiplier {p.multiplier}",
                    effect="caa: every number",
                )
            )
        if p.held_out != MAPLE_HELD_OUT or p.select_limit is not None:
            cap = f", at most {p.select_limit} of them in the layer sweep" if p.select_limit is not None else ""
            out.append(
                Deviation(
                    "caa-layer-selection-share",
                    paper="within each fold 80% builds the steering vector and the other 20% selects the layer",
                    kbench=f"{round(100 * (1 - p.held_out))}% builds it, {round(100 * p.held_out)}% selects the layer{cap}",
                    effect="caa: every number",
                )
            )
        unselected = [r for r in fitted if not r.get("select")]
        if unselected:
            out.append(
                Deviation(
                    "caa-layer-not-selected",
                    paper="the layer with the largest held-out change in the gold first token's probability (delta p)",
                    kbench=f"{len(unselected)} fitting pool(s) too small to hold out any item: layer 0 without selection",
                    effect="caa: every number",
                )
            )
        return out

    def fit(self, context, pool) -> tuple[object, dict]:
        """(vector, record) fitted on `pool`: record holds layer, Δp and the sizes used; cached in
        the run's fit folder."""
        import math

        p, model = self.p, context.model
        store = FitStore(context.fit_dir)
        key = {"format": 2, "model": model.info.identity, **self.params(), "pool": sorted(i.id for i in pool)}
        found = store.load("caa", key)
        if found is not None:
            return found[0]["vector"], found[1]["record"]
        build, select = split_pool(pool, p.held_out)
        select = select[: p.select_limit] if p.select_limit else select
        true, false = contrast_texts(context, build, pool)
        if not true:
            raise ValueError("CAA needs at least two items with different answers in each fitting pool")
        layers = list(range(model.layout().num_layers))
        with progress(f"CAA fit on {len(pool)} facts", total=4 if select else 2, unit="passes") as advance:
            vectors = self.vectors(context, true, false, advance)
            layer, delta_p = layers[0], None
            if select:
                prompts = [context.answer_prompt(i.question) for i in select]
                golds = [context.gold(i) for i in select]
                base = [math.exp(lp) for _, lp in model.rank_first_token(prompts, golds)]
                advance(1)
                sweep = [steering(candidate, vectors[candidate], p.multiplier) for candidate in layers]
                ranked = model.rank_first_token_each(prompts, golds, sweep)  # one prefix pass for every layer
                steered = {candidate: [math.exp(lp) for _, lp in ranks] for candidate, ranks in zip(layers, ranked)}
                advance(1)
                layer, delta_p = best_layer(base, steered)
        record = {
            "pool": len(pool),
            "pool_ids_sha256": stable_hash(key["pool"]),
            "pairs": len(true),
            "select": len(select),
            "layer": layer,
            "delta_p": delta_p,
        }
        store.save("caa", key, {"vector": vectors[layer]}, {"record": record})
        return vectors[layer], record

    @staticmethod
    def vectors(context, true: Sequence, false: Sequence, advance=lambda n: None):
        """(layers, hidden) steering vectors from true / false statements (answer prompts continued, `contrast_texts`)."""
        layers = list(range(context.model.layout().num_layers))
        activations = []
        for texts in (true, false):
            activations.append(context.model.activations(texts, "residual", layers))  # (texts, layers, hidden)
            advance(1)
        return mean_difference(*activations)

    def run(self, context, items):
        outputs = {}
        for pool, answered in fitting_plan(context, items):
            vector, record = self.fit(context, pool)
            prompts = [context.answer_prompt(i.question) for i in answered]
            results = greedy_answers(
                context,
                prompts,
                answered,
                steering(record["layer"], vector, self.p.multiplier),
                detail=[{"fit": record} for _ in answered],
            )
            outputs.update({i.id: r for i, r in zip(answered, results)})
        return [outputs[i.id] for i in items]
