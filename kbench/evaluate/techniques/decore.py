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
3. Each decoding step contrasts (`contrast`, DeCoRe_entropy as in the reference code):
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
from kbench.evaluate.techniques import register_technique
from kbench.evaluate.techniques.base import Technique, TechniqueParams, greedy_answers
from kbench.evaluate.techniques.fitting import FitStore, forward_padded, real_token_mask
from kbench.io import stable_hash
from kbench.models import hooks
from kbench.models.interface import Intervention


def retrieval_scores(
    model, vocab_size: int, trials: int = 8, needle: int = 16, filler: int = 48, seed: int = 0, avoid: set[int] = frozenset()
):
    """(layers, heads) retrieval score of every head on the synthetic copy task."""
    import torch

    layout = hooks.head_layout(model)
    generator = torch.Generator().manual_seed(seed)
    allowed = torch.tensor([t for t in range(vocab_size) if t not in avoid])
    hits = torch.zeros(layout.num_layers, layout.num_heads)
    steps = 0
    previous = model.config._attn_implementation
    model.set_attn_implementation("eager")  # only eager attention returns the weights
    try:
        for _ in range(trials):
            picks = allowed[torch.randperm(len(allowed), generator=generator)[: needle + filler]]
            hay, pin = picks[needle:], picks[:needle]
            cut = filler // 2
            sequence = torch.cat([hay[:cut], pin, hay[cut:], pin])[None]
            start, repeat = cut, needle + filler  # first position of the needle and of its repeat
            with torch.inference_mode():
                out = model(input_ids=sequence.to(model.device), output_attentions=True, use_cache=False)
            for j in range(needle - 1):  # reading pin[j] in the repeat, the next token is pin[j + 1]
                query, source = repeat + j, start + j + 1
                for layer, attention in enumerate(out.attentions):
                    hits[layer] += (attention[0, :, query].argmax(-1).cpu() == source).float()
                steps += 1
    finally:
        model.set_attn_implementation(previous)
    return hits / max(steps, 1)


def contrast(base_logits, masked_logits, alpha_cap: float | None = None):
    """DeCoRe_entropy on [B, V] raw logits: (1 + a) · base − a · masked, a = entropy (nats) of
    softmax(base) per row, capped at alpha_cap when given."""
    log_probs = base_logits.log_softmax(-1)
    alpha = -(log_probs.exp() * log_probs).sum(-1, keepdim=True)
    if alpha_cap is not None:
        alpha = alpha.clamp(max=alpha_cap)
    return (1 + alpha) * base_logits - alpha * masked_logits


def entropy_contrast(model, pad_id: int, masked_heads: dict, alpha_cap: float | None = None):
    """The DeCoRe logits processor: `contrast` of the scores with the masked model's logits."""
    import torch

    def processor(input_ids, scores):
        mask = real_token_mask(input_ids, pad_id)
        with hooks.mask_heads(model, masked_heads):
            masked = forward_padded(model, input_ids, mask, logits_to_keep=1).logits[:, -1].float()
        return contrast(scores, masked, alpha_cap)

    return torch.no_grad()(processor)


def top_heads(scores, count: int) -> list[list[int]]:
    """[layer, head] of the `count` highest (layers, heads) scores; ties: lower layer, then head."""
    heads = scores.shape[1]
    flat = scores.flatten().tolist()
    order = sorted(range(len(flat)), key=lambda h: (-flat[h], h))[:count]
    return [[h // heads, h % heads] for h in order]


class DeCoReParams(TechniqueParams):
    retrieval_heads: int = Field(10, ge=1)  # heads masked (MAPLE: 10)
    trials: int = Field(8, ge=1)  # synthetic copy sequences that score the heads
    needle: int = Field(16, ge=2)  # tokens copied per sequence
    filler: int = Field(48, ge=2)  # random tokens around the needle
    seed: int = 0  # seeds the synthetic sequences
    alpha_cap: float | None = Field(None, gt=0)  # upper bound on the entropy weight (None: none)


@register_technique("decore")
class DeCoRe(Technique):
    family = "decoding"
    Params = DeCoReParams

    def check(self, model) -> None:
        layout = hooks.head_layout(model)
        total = layout.num_layers * layout.num_heads
        if self.p.retrieval_heads > total:
            raise UserError(
                f"DeCoRe masks {self.p.retrieval_heads} retrieval heads but the model has {total} heads in "
                f"all; choose fewer (--technique-param decore.retrieval_heads=N)"
            )

    def deviations(self, fitted):
        out = [
            "retrieval heads scored on a synthetic teacher-forced copy task; Wu et al. (2024), whom DeCoRe and MAPLE "
            "follow, detect them on needle-in-a-haystack retrieval and count a head only when the model emits the copied token"
        ]
        if self.p.retrieval_heads != 10:
            out.append(f"{self.p.retrieval_heads} masked heads instead of MAPLE's 10")
        return out

    def heads(self, context) -> dict:
        """The fit record: masked heads, their scores and how they were found (cached)."""
        p, runner = self.p, context.runner
        store = FitStore(context.fit_dir)
        key = {"format": 2, "model": runner.identity, **self.params()}
        found = store.load("decore", key)
        if found is not None:
            return found[1]["record"]
        self.check(runner.model)
        scores = retrieval_scores(
            runner.model,
            runner.model.config.vocab_size,
            p.trials,
            p.needle,
            p.filler,
            p.seed,
            avoid=set(runner.tokenizer.all_special_ids),
        )
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
            logits_processor=entropy_contrast(context.runner.model, context.runner.pad_id, masked, self.p.alpha_cap),
        )
        return greedy_answers(
            context,
            [context.answer_prompt(i.question) for i in items],
            items,
            intervention,
            detail=[{"fit": record} for _ in items],
        )
