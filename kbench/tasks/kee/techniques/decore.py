"""DeCoRe: Decoding by Contrasting Retrieval Heads (Gema et al., 2025, "DeCoRe: Decoding by
Contrasting Retrieval Heads to Mitigate Hallucinations"; as configured in MAPLE, Appendix B).

1. Retrieval heads (Wu et al., 2024) are found on a synthetic copy task: a random "needle" of
   tokens sits inside random filler and is then repeated, teacher-forced. While the repeat is
   read, a head retrieves when its strongest attention from the current token points at the
   needle position holding the next token (the token being copied). Its retrieval score is the
   share of copy steps where it does so, over `trials` seeded sequences. The original score
   also requires the model to emit that token; a teacher-forced read keeps the score defined
   for models that do not copy yet, which is the case for small or random models.
2. The top `retrieval_heads` heads (10, as in MAPLE; ties go to the lower layer, then head)
   are masked (their o_proj input zeroed) to obtain the "hallucinating" model. More heads than
   the model has is an error. The results record the masked heads, their retrieval scores and
   the detection settings.
3. Each decoding step contrasts (`MaskedHeadContrast`, carried out by the backend:
   `kbench.models.interventions.contrast`; DeCoRe_entropy as in the reference code):
   scores = (1 + a) · base_logits − a · masked_logits on the raw next-token logits, with
   a = the entropy (nats, not normalised, no cap) of the base model's next-token distribution.
   `alpha_cap` bounds a (the reference code's option, off by default there and here).
   The masked pass recomputes the whole prefix each step; answers are short.

Parameters: retrieval_heads = 10, trials = 8, needle = 16 tokens, filler = 48 tokens, seed = 0,
alpha_cap = None.
"""

from __future__ import annotations

from pydantic import Field

from kbench.errors import UserError
from kbench.io import stable_hash
from kbench.models.interface import Capability, Intervention, MaskedHeadContrast
from kbench.progress import progress
from kbench.protocol import Deviation
from kbench.tasks.kee.techniques import register_technique
from kbench.tasks.kee.techniques.base import Technique, TechniqueParams, greedy_answers
from kbench.tasks.kee.techniques.fitting import FitStore

MAPLE_HEADS = 10  # MAPLE, Appendix B: num_retrieval_head = 10 for every model


def copy_task(vocab_size: int, trials: int, needle: int, filler: int, seed: int, avoid: frozenset[int] | set[int] = frozenset()):
    """The synthetic copy sequences (token-id lists) and, per sequence, the copy steps as
    (query positions, source positions): reading pin[j] in the repeat, the head should look at
    the needle position holding pin[j + 1]."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    allowed = torch.tensor([t for t in range(vocab_size) if t not in avoid])
    sequences = []
    for _ in range(trials):
        picks = allowed[torch.randperm(len(allowed), generator=generator)[: needle + filler]]
        hay, pin = picks[needle:], picks[:needle]
        cut = filler // 2
        sequences.append(torch.cat([hay[:cut], pin, hay[cut:], pin]).tolist())
    start, repeat = filler // 2, needle + filler  # first position of the needle and of its repeat
    queries = [repeat + j for j in range(needle - 1)]
    sources = [start + j + 1 for j in range(needle - 1)]
    return sequences, queries, sources


SEQUENCES_PER_CALL = 4  # the backend batches a call's sequences; several calls let progress (and its ETA) move


def retrieval_scores(model, trials: int = 8, needle: int = 16, filler: int = 48, seed: int = 0, advance=lambda n: None):
    """(layers, heads) retrieval score of every head on the synthetic copy task: the share of
    copy steps whose strongest attention points at the needle token being copied."""
    import torch

    avoid = set(model.special_token_ids())
    sequences, queries, sources = copy_task(model.layout().vocab_size, trials, needle, filler, seed, avoid)
    hits = None
    for start in range(0, len(sequences), SEQUENCES_PER_CALL):
        chunk = sequences[start : start + SEQUENCES_PER_CALL]
        strongest = model.strongest_attention(chunk, queries)  # (sequences, layers, heads, queries)
        found = (strongest == torch.tensor(sources)).float().sum((0, -1))
        hits = found if hits is None else hits + found
        advance(len(chunk))
    assert hits is not None, "the copy task made no sequences"  # trials >= 1 (DeCoReParams)
    return hits / max(len(sequences) * len(queries), 1)


def top_heads(scores, count: int) -> list[list[int]]:
    """[layer, head] of the `count` highest (layers, heads) scores; ties: lower layer, then head."""
    heads = scores.shape[1]
    flat = scores.flatten().tolist()
    order = sorted(range(len(flat)), key=lambda h: (-flat[h], h))[:count]
    return [[h // heads, h % heads] for h in order]


class DeCoReParams(TechniqueParams):
    retrieval_heads: int = Field(MAPLE_HEADS, ge=1)  # heads masked (MAPLE: 10)
    trials: int = Field(8, ge=1)  # synthetic copy sequences that score the heads
    needle: int = Field(16, ge=2)  # tokens copied per sequence
    filler: int = Field(48, ge=2)  # random tokens around the needle
    seed: int = 0  # seeds the synthetic sequences
    alpha_cap: float | None = Field(None, gt=0)  # upper bound on the entropy weight (None: none)


@register_technique("decore")
class DeCoRe(Technique):
    family = "decoding"
    Params = DeCoReParams
    p: DeCoReParams  # the validated settings (`Technique.__init__`)
    needs = frozenset({Capability.WHITE_BOX, Capability.GENERATE})

    def check(self, model) -> None:
        layout = model.layout()
        total = layout.num_layers * layout.num_heads
        if self.p.retrieval_heads > total:
            raise UserError(
                f"DeCoRe masks {self.p.retrieval_heads} retrieval heads but the model has {total} heads in "
                f"all; choose fewer (--technique-param decore.retrieval_heads=N)"
            )

    def deviations(self, fitted):
        out = [
            Deviation(
                "decore-synthetic-retrieval-heads",
                paper="retrieval heads detected as in Wu et al. (2024), on needle-in-a-haystack retrieval, a head "
                "counting only when the model emits the copied token",
                kbench=f"retrieval heads scored on {self.p.trials} synthetic teacher-forced copy sequences",
                effect="decore: every number",
            )
        ]
        if self.p.retrieval_heads != MAPLE_HEADS:
            out.append(
                Deviation(
                    "decore-retrieval-heads",
                    paper=f"{MAPLE_HEADS} masked retrieval heads",
                    kbench=f"{self.p.retrieval_heads} masked heads",
                    effect="decore: every number",
                )
            )
        if self.p.alpha_cap is not None:
            out.append(
                Deviation(
                    "decore-alpha-cap",
                    paper="the entropy weight is not capped",
                    kbench=f"entropy weight capped at {self.p.alpha_cap}",
                    effect="decore: every number",
                )
            )
        return out

    def heads(self, context) -> dict:
        """The fit record: masked heads, their scores and how they were found (cached)."""
        p, model = self.p, context.model
        store = FitStore(context.fit_dir)
        key = {"format": 2, "model": model.info.identity, **self.params()}
        found = store.load("decore", key)
        if found is not None:
            return found[1]["record"]
        self.check(model)
        with progress("DeCoRe retrieval heads", total=p.trials, unit="sequences") as advance:
            scores = retrieval_scores(model, p.trials, p.needle, p.filler, p.seed, advance)
        selected = top_heads(scores, p.retrieval_heads)
        record = {
            "masked_heads": selected,
            "retrieval_scores": [float(scores[layer, h]) for layer, h in selected],
            "selection": f"top {p.retrieval_heads} heads by retrieval score (Wu et al., 2024): the share of "
            f"copy steps whose strongest attention points at the needle token being copied, on "
            f"{p.trials} teacher-forced synthetic sequences ({p.needle}-token needle, "
            f"{p.filler} filler tokens, seed {p.seed})",
        }
        store.save("decore", key, {"scores": scores}, {"record": record})
        return record

    def run(self, context, items):
        record = self.heads(context)
        masked: dict[int, list[int]] = {}
        for layer, head in record["masked_heads"]:
            masked.setdefault(int(layer), []).append(int(head))
        intervention = Intervention(
            key=stable_hash(["decore", self.params(), sorted(masked.items())]),
            logits=MaskedHeadContrast(masked, self.p.alpha_cap),
        )
        return greedy_answers(
            context,
            [context.answer_prompt(i.question) for i in items],
            items,
            intervention,
            detail=[{"fit": record} for _ in items],
        )
