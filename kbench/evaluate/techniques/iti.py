"""ITI: Inference-Time Intervention (Li et al., 2023, "Inference-Time Intervention: Eliciting
Truthful Answers from a Language Model"; as configured in MAPLE, Appendix B).

Probes: one logistic-regression probe per attention head on the head's output (the input of
o_proj, at the last token) for true vs false statements. Offline there is no TruthfulQA, so the
statements come from the benchmark itself: answer prompt + " " + gold (true) and + " " + another
item's answer (false), built from the train split or from the other fold (`fitting.py`).
80% of the pool trains the probes, 20% ranks them by validation accuracy; the top K heads are
shifted. Direction: ITI's default mass-mean direction (mean true − mean false activation of the
head, unit length); shift = alpha × sigma × direction, sigma = standard deviation of the pool's
activations projected on the direction. As in the reference code (start_edit_location "lt"),
the shift is added at the last position of each forward pass: the prompt's last token, then
every generated token.

Parameters: alpha = 15; K = 48 heads for a 32×32-head model, scaled to the model's head count
(round(48 × heads / 1024), at least 1); held_out = 0.2; probes: 200 Adam steps, lr 0.05, L2 1e-3.
"""

from __future__ import annotations

from kbench.evaluate.techniques import register_technique
from kbench.evaluate.techniques.base import Technique, greedy_answers
from kbench.evaluate.techniques.fitting import (FitStore, contrast_texts, fitting_plan, last_token_activations,
                                                split_pool)
from kbench.io import stable_hash
from kbench.models import hooks
from kbench.models.runner import Intervention

REFERENCE_HEADS, REFERENCE_K = 32 * 32, 48


def scaled_k(total_heads: int) -> int:
    return max(1, round(REFERENCE_K * total_heads / REFERENCE_HEADS))


def probe_accuracies(x_train, y_train, x_val, y_val, steps: int = 200, lr: float = 0.05, l2: float = 1e-3):
    """Validation accuracy of one logistic probe per head, all heads trained together.
    x_*: (heads, n, dim) features; y_*: (n,) labels in {0, 1}. Returns (heads,)."""
    import torch

    mean, std = x_train.mean(1, keepdim=True), x_train.std(1, keepdim=True) + 1e-6
    xt, xv = (x_train - mean) / std, (x_val - mean) / std
    heads, _, dim = xt.shape
    torch.manual_seed(0)
    weight = torch.zeros(heads, dim, requires_grad=True)
    bias = torch.zeros(heads, 1, requires_grad=True)
    optimiser = torch.optim.Adam([weight, bias], lr=lr)
    target = y_train.float().expand(heads, -1)
    with torch.enable_grad():
        for _ in range(steps):
            optimiser.zero_grad()
            logits = torch.einsum("hnd,hd->hn", xt, weight) + bias
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target) + l2 * weight.pow(2).sum(1).mean()
            loss.backward()
            optimiser.step()
    with torch.no_grad():
        predicted = (torch.einsum("hnd,hd->hn", xv, weight) + bias) > 0
        return (predicted == y_val.bool()).float().mean(1)


def head_shifts(selected: list[tuple[int, int]], true_acts, false_acts, alpha: float, num_heads: int):
    """{layer: (num_heads, head_dim) shift} along each selected head's mass-mean direction."""
    import torch

    shifts: dict[int, torch.Tensor] = {}
    for layer, head in selected:
        t, f = true_acts[:, layer, head], false_acts[:, layer, head]
        direction = t.mean(0) - f.mean(0)
        direction = direction / (direction.norm() + 1e-12)
        sigma = (torch.cat([t, f]) @ direction).std()
        shift = shifts.setdefault(layer, torch.zeros(num_heads, t.shape[-1]))
        shift[head] = alpha * sigma * direction
    return shifts


def head_intervention(shifts: dict) -> Intervention:
    key = stable_hash(["iti", "last", {str(layer): s.tolist() for layer, s in sorted(shifts.items())}])
    return Intervention(key=key, hooks=lambda model: hooks.shift_heads(model, shifts, last_only=True))


@register_technique("iti")
class ITI(Technique):
    family = "steering"

    def __init__(self, alpha: float = 15.0, top_k: int | None = None, held_out: float = 0.2):
        self.alpha, self.top_k, self.held_out = alpha, top_k, held_out

    def params(self):
        return {"alpha": self.alpha, "top_k": self.top_k, "held_out": self.held_out}

    def fit(self, context, pool):
        """({layer: shift}, selected heads) fitted on `pool`; cached in the run's fit folder."""
        import torch

        runner = context.runner
        layout = hooks.head_layout(runner.model)
        store = FitStore(context.fit_dir)
        key = {"model": runner.loaded.identity, **self.params(), "pool": sorted(i.id for i in pool)}
        found = store.load("iti", key)
        if found is not None:
            tensors, meta = found
            return {int(k): v for k, v in tensors.items()}, [tuple(h) for h in meta["heads"]]
        layers = list(range(layout.num_layers))
        capture = lambda model: hooks.capture_head_inputs(model, layers)  # noqa: E731
        read = lambda seen: torch.stack([seen[l] for l in layers], 2)  # noqa: E731  (batch, seq, layers, heads, dim)
        build, select = split_pool(pool, self.held_out)
        acts = {}
        for name, part in (("build", build), ("select", select or build)):
            true, false = contrast_texts(context, part, pool)
            acts[name] = (last_token_activations(runner, true, capture, read),
                          last_token_activations(runner, false, capture, read))

        def features(name):
            t, f = acts[name]
            x = torch.cat([t, f]).flatten(1, 2).transpose(0, 1)  # (layers*heads, n, dim)
            return x, torch.cat([torch.ones(len(t)), torch.zeros(len(f))])

        accuracy = probe_accuracies(*features("build"), *features("select"))
        k = self.top_k or scaled_k(layout.num_layers * layout.num_heads)
        order = sorted(range(len(accuracy)), key=lambda h: (-float(accuracy[h]), h))[:k]
        selected = [(h // layout.num_heads, h % layout.num_heads) for h in order]
        true_all = torch.cat([acts["build"][0], acts["select"][0]])
        false_all = torch.cat([acts["build"][1], acts["select"][1]])
        shifts = head_shifts(selected, true_all, false_all, self.alpha, layout.num_heads)
        store.save("iti", key, {str(layer): s for layer, s in shifts.items()},
                   {"heads": selected, "val_accuracy": [float(accuracy[h]) for h in order]})
        return shifts, selected

    def run(self, context, items):
        outputs = {}
        for pool, answered in fitting_plan(context, items):
            shifts, selected = self.fit(context, pool)
            prompts = [context.answer_prompt(i.question) for i in answered]
            results = greedy_answers(context, prompts, answered, head_intervention(shifts),
                                     detail=[{"heads": selected} for _ in answered])
            outputs.update({i.id: r for i, r in zip(answered, results)})
        return [outputs[i.id] for i in items]
