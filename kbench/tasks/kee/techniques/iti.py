"""ITI: Inference-Time Intervention (Li et al., 2023, "Inference-Time Intervention: Eliciting
Truthful Answers from a Language Model"; as configured in MAPLE, Appendix B).

Probes: one logistic-regression probe per attention head on the head's output (the input of
o_proj, at the last token) for true vs false statements. As in MAPLE and Li et al., the statements
come from TruthfulQA when the data root holds it (`kbench data fetch truthfulqa`; `truthfulqa.py`):
80% of its questions train the probes, 20% rank them by validation accuracy, and one fit serves
every item. A file there that is not TruthfulQA (`truthfulqa.not_truthfulqa`) still trains them,
and the protocol block records it (`iti-probes-not-truthfulqa`). Without it (`probe_data` = auto)
they come from the benchmark itself, which the protocol block records (`iti-probes-benchmark`):
answer prompt + " " + gold (true) and + " " + another item's answer (false),
built from the train split or from the other fold (`fitting.py`), 80% of the pool
training the probes and 20% ranking them. The top K heads are shifted. Direction: ITI's default
mass-mean direction (mean true − mean false activation of the head, unit length); shift =
alpha × sigma × direction, sigma = population standard deviation of the pool's true and false
activations projected on the direction (`head_shifts`). Only the K chosen heads move; every other
head's output is untouched. As in the reference code (start_edit_location "lt"), the shift is
added at the last position of each forward pass: the prompt's last token, then every generated token.

Parameters: alpha = 15 and K = 48 heads, ITI's defaults, which MAPLE uses for every model.
A model with fewer than K heads in all is an error, not a silent clamp: K heads are the
protocol, and a smaller K is a different experiment that the user asks for by name, either
`heads` = N or `scale_heads` = true (K scaled to the model's head count relative to the
32×32 heads of the 7B Llama ITI was tuned on: max(1, round(K · heads / 1024))). The results
record K as requested and as used, the chosen heads with their validation accuracy, and sigma.
held_out = 0.2; probes: 200 Adam steps, lr 0.05, L2 1e-3 on standardised features (the
reference fits sklearn's LogisticRegression; selection only needs the accuracy ranking).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kbench.errors import UserError
from kbench.io import stable_hash
from kbench.models.interface import Capability, HeadShift, Intervention
from kbench.progress import progress
from kbench.protocol import Deviation
from kbench.tasks.kee.techniques import register_technique
from kbench.tasks.kee.techniques.base import Technique, TechniqueParams, greedy_answers
from kbench.tasks.kee.techniques.fitting import FitStore, contrast_texts, fitting_plan, split_pool
from kbench.tasks.kee.techniques.truthfulqa import ProbingSet, find_csv, not_truthfulqa, read_probing_set

REFERENCE_HEADS = 32 * 32  # Llama-7B, where ITI's K = 48 was chosen
MAPLE_HEADS, MAPLE_ALPHA = 48, 15.0
PAPER_PROBES = "probes trained and heads ranked on a train/validation split of TruthfulQA (MAPLE, as Li et al.)"


def heads_to_shift(total_heads: int, heads: int, scale: bool) -> int:
    """K, the number of heads ITI shifts: `heads`, or scaled to the model (see the module doc)."""
    k = max(1, round(heads * total_heads / REFERENCE_HEADS)) if scale else heads
    if k > total_heads:
        raise UserError(
            f"ITI shifts K = {k} heads but the model has {total_heads} heads in all; choose a "
            f"smaller K (--technique-param iti.heads=N) or scale it to the model "
            f"(--technique-param iti.scale_heads=true)"
        )
    return k


def select_heads(accuracy, k: int, num_heads: int) -> list[tuple[int, int]]:
    """The k (layer, head) pairs of highest probe accuracy; accuracy is flat over layer * num_heads
    + head, ties go to the lower flat index."""
    order = sorted(range(len(accuracy)), key=lambda h: (-float(accuracy[h]), h))[:k]
    return [(h // num_heads, h % num_heads) for h in order]


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
            logits = (xt * weight[:, None]).sum(-1) + bias  # per-head dot products; 3x faster than einsum's bmm here
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, target) + l2 * weight.pow(2).sum(1).mean()
            loss.backward()
            optimiser.step()
    with torch.no_grad():
        predicted = ((xv * weight[:, None]).sum(-1) + bias) > 0
        return (predicted == y_val.bool()).float().mean(1)


def head_shifts(selected: list[tuple[int, int]], true_acts, false_acts, alpha: float, num_heads: int):
    """({layer: (num_heads, head_dim) shift}, [sigma per selected head]): each selected head moves
    by alpha · sigma · d, d = the unit mass-mean direction (mean true − mean false activation),
    sigma = the population standard deviation (np.std, as the reference code) of all true and
    false activations projected on d. Unselected heads get zero rows.
    true_acts / false_acts: (statements, layers, heads, head_dim)."""
    import torch

    shifts: dict[int, torch.Tensor] = {}
    sigmas = []
    for layer, head in selected:
        t, f = true_acts[:, layer, head], false_acts[:, layer, head]
        direction = t.mean(0) - f.mean(0)
        direction = direction / (direction.norm() + 1e-12)
        sigma = (torch.cat([t, f]) @ direction).std(correction=0)
        shift = shifts.setdefault(layer, torch.zeros(num_heads, t.shape[-1]))
        shift[head] = alpha * sigma * direction
        sigmas.append(float(sigma))
    return shifts, sigmas


def features(true_and_false):
    """(features (layers*heads, n, dim), labels (n,)) of true (1) and false (0) statements'
    head activations, each (statements, layers, heads, dim)."""
    import torch

    t, f = true_and_false
    x = torch.cat([t, f]).flatten(1, 2).transpose(0, 1)
    return x, torch.cat([torch.ones(len(t)), torch.zeros(len(f))])


def head_intervention(shifts: dict) -> Intervention:
    key = stable_hash(["iti", "last", {str(layer): s.tolist() for layer, s in sorted(shifts.items())}])
    return Intervention(key=key, edits=(HeadShift(shifts, last_only=True),))


class ITIParams(TechniqueParams):
    alpha: float = MAPLE_ALPHA  # intervention strength (ITI / MAPLE: 15)
    heads: int = Field(MAPLE_HEADS, ge=1)  # K, heads shifted (ITI / MAPLE: 48)
    scale_heads: bool = False  # scale K by the model's heads / 1024 (not the paper)
    held_out: float = Field(0.2, gt=0, lt=1)  # share of the pool that ranks the probes
    probe_data: Literal["auto", "truthfulqa", "benchmark"] = "auto"  # auto: TruthfulQA when the data root has it


TRUTHFULQA = "truthfulqa"
BENCHMARK = "benchmark train facts"


@register_technique("iti")
class ITI(Technique):
    family = "steering"
    Params = ITIParams
    p: ITIParams  # the validated settings (`Technique.__init__`)
    needs = frozenset({Capability.WHITE_BOX, Capability.GENERATE})

    def check(self, model) -> None:
        layout = model.layout()
        heads_to_shift(layout.num_layers * layout.num_heads, self.p.heads, self.p.scale_heads)
        if self.p.probe_data == "truthfulqa" and find_csv() is None:
            raise UserError(
                "ITI probe_data=truthfulqa: the data root has no truthfulqa/TruthfulQA.csv; run `kbench data fetch truthfulqa`"
            )

    def probing_set(self) -> ProbingSet | None:
        """TruthfulQA when this run's probes train on it, else None (the benchmark's facts)."""
        path = None if self.p.probe_data == "benchmark" else find_csv()
        return read_probing_set(path) if path is not None else None

    def deviations(self, fitted):
        out = []
        if any(r.get("probe_source") != TRUTHFULQA for r in fitted):
            out.append(
                Deviation(
                    "iti-probes-benchmark",
                    paper=PAPER_PROBES,
                    kbench="probes trained and heads ranked on the benchmark's own true/false completions (train facts "
                    "or the other fold): the data root has no TruthfulQA (`kbench data fetch truthfulqa`) "
                    "or probe_data=benchmark",
                    effect="iti: every number",
                )
            )
        unverified = sorted({r["not_truthfulqa"] for r in fitted if r.get("not_truthfulqa")})
        if unverified:
            out.append(
                Deviation(
                    "iti-probes-not-truthfulqa",
                    paper=PAPER_PROBES,
                    kbench="probes trained on a file in TruthfulQA's place that is not TruthfulQA: " + "; ".join(unverified),
                    effect="iti: every number",
                )
            )
        used = sorted({r["heads_used"] for r in fitted if r.get("heads_used") is not None}) or [self.p.heads]
        if used != [MAPLE_HEADS]:
            out.append(
                Deviation(
                    "iti-heads",
                    paper=f"K = {MAPLE_HEADS} shifted heads",
                    kbench=f"K = {', '.join(map(str, used))} shifted heads"
                    + (" (scaled to the model's head count)" if self.p.scale_heads else ""),
                    effect="iti: every number",
                )
            )
        if self.p.alpha != MAPLE_ALPHA:
            out.append(
                Deviation("iti-alpha", paper=f"alpha = {MAPLE_ALPHA:g}", kbench=f"alpha = {self.p.alpha:g}", effect="iti: all")
            )
        return out

    def contrasts(self, context, pool, probing: ProbingSet | None):
        """{"build": (true, false), "select": (true, false)} statement texts, and the fit key's data part."""
        texts: dict[str, tuple[list, list]]  # TruthfulQA's statement strings, or the pool's Prompt values
        if probing is not None:
            build, select = probing.split(self.p.held_out)
            texts = {"build": probing.statements(build), "select": probing.statements(select or build)}
            return texts, {"probe_set": TRUTHFULQA, "probe_set_sha256": probing.sha256}, not select
        build, select = split_pool(pool, self.p.held_out)
        texts = {name: contrast_texts(context, part, pool) for name, part in (("build", build), ("select", select or build))}
        return texts, {"pool": sorted(i.id for i in pool)}, not select

    def fit(self, context, pool, probing: ProbingSet | None = None):
        """({layer: shift}, record) fitted on TruthfulQA (`probing`) or else on `pool`; cached in the run's fit folder."""
        import torch

        p, model = self.p, context.model
        layout = model.layout()
        k = heads_to_shift(layout.num_layers * layout.num_heads, p.heads, p.scale_heads)
        store = FitStore(context.fit_dir)
        texts, data_key, no_select = self.contrasts(context, pool, probing)
        key = {"format": 2, "model": model.info.identity, **self.params(), **data_key}
        found = store.load("iti", key)
        if found is not None:
            tensors, meta = found
            return {int(k): v for k, v in tensors.items()}, meta["record"]
        layers = list(range(layout.num_layers))
        acts = {}
        with progress(f"ITI fit on {len(pool)} facts", total=3, unit="steps") as advance:
            for name, (true, false) in texts.items():
                # true and false in one call: a pair shares its whole prompt, which the backend then runs once
                both = model.activations(true + false, "heads", layers)  # (texts, layers, heads, dim)
                acts[name] = [both[: len(true)], both[len(true) :]]
                advance(1)
            accuracy = probe_accuracies(*features(acts["build"]), *features(acts["select"]))
            advance(1)
        selected = select_heads(accuracy, k, layout.num_heads)
        parts = ("build",) if no_select else ("build", "select")  # without a held-out share, select is build
        true_all = torch.cat([acts[name][0] for name in parts])
        false_all = torch.cat([acts[name][1] for name in parts])
        shifts, sigmas = head_shifts(selected, true_all, false_all, p.alpha, layout.num_heads)
        record = {
            "probe_source": TRUTHFULQA if probing is not None else BENCHMARK,
            "probe_data": probing.describe() if probing is not None else f"{len(pool)} benchmark items",
            "not_truthfulqa": not_truthfulqa(probing) if probing is not None else None,
            "pool": len(probing.questions) if probing is not None else len(pool),
            "pool_ids_sha256": probing.sha256 if probing is not None else stable_hash(key["pool"]),
            "pairs": len(true_all),
            "heads_requested": p.heads,
            "heads_used": k,
            "selection": "top-K heads by probe accuracy on the held-out share of the pool",
            "heads": [list(h) for h in selected],
            "val_accuracy": [float(accuracy[layer * layout.num_heads + h]) for layer, h in selected],
            "sigma": sigmas,
        }
        store.save("iti", key, {str(layer): s for layer, s in shifts.items()}, {"record": record})
        return shifts, record

    def run(self, context, items):
        outputs = {}
        probing = self.probing_set()
        plan = [([], list(items))] if probing is not None else fitting_plan(context, items)  # TruthfulQA: one fit for all
        for pool, answered in plan:
            shifts, record = self.fit(context, pool, probing)
            prompts = [context.answer_prompt(i.question) for i in answered]
            results = greedy_answers(
                context, prompts, answered, head_intervention(shifts), detail=[{"fit": record} for _ in answered]
            )
            outputs.update({i.id: r for i, r in zip(answered, results)})
        return [outputs[i.id] for i in items]
