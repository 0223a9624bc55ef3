"""DeCoRe: Decoding by Contrasting Retrieval Heads (Gema et al., 2025, "DeCoRe: Decoding by
Contrasting Retrieval Heads to Mitigate Hallucinations"; as configured in MAPLE, Appendix B).

1. Retrieval heads (Wu et al., 2024) are found on a synthetic copy task: a random "needle" of
   tokens sits inside random filler and is then repeated, teacher-forced. While the repeat is
   read, a head retrieves when its strongest attention from the current token points at the
   needle position holding the next token (the token being copied). Its retrieval score is the
   share of copy steps where it does so, over `trials` seeded sequences. The original score
   also requires the model to emit that token; a teacher-forced read keeps the score defined
   for models that do not copy yet, which is the case for small or random models.
2. The top `retrieval_heads` heads (10, as in MAPLE, capped at a quarter of all heads) are
   masked to obtain the "hallucinating" model.
3. Each decoding step contrasts: scores = (1 + a) · base_logits − a · masked_logits, with
   a = the entropy (nats) of the base model's next-token distribution (DeCoRe_entropy).
   The masked pass recomputes the whole prefix each step; answers are short.

Parameters: retrieval_heads = 10, trials = 8, needle = 16 tokens, filler = 48 tokens, seed = 0.
"""

from __future__ import annotations

from kbench.evaluate.techniques import register_technique
from kbench.evaluate.techniques.base import Technique, greedy_answers
from kbench.evaluate.techniques.fitting import FitStore, forward_padded, real_token_mask
from kbench.io import stable_hash
from kbench.models import hooks
from kbench.models.runner import Intervention


def retrieval_scores(model, vocab_size: int, trials: int = 8, needle: int = 16, filler: int = 48, seed: int = 0,
                     avoid: set[int] = frozenset()):
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
            start, repeat = cut, needle + filler   # first position of the needle and of its repeat
            with torch.inference_mode():
                out = model(input_ids=sequence.to(model.device), output_attentions=True, use_cache=False)
            for j in range(needle - 1):       # reading pin[j] in the repeat, the next token is pin[j + 1]
                query, source = repeat + j, start + j + 1
                for layer, attention in enumerate(out.attentions):
                    hits[layer] += (attention[0, :, query].argmax(-1).cpu() == source).float()
                steps += 1
    finally:
        model.set_attn_implementation(previous)
    return hits / max(steps, 1)


def entropy_contrast(model, pad_id: int, masked_heads: dict):
    """The DeCoRe logits processor: (1 + H) · base − H · masked, H = base next-token entropy."""
    import torch

    def processor(input_ids, scores):
        mask = real_token_mask(input_ids, pad_id)
        with hooks.mask_heads(model, masked_heads):
            masked = forward_padded(model, input_ids, mask, logits_to_keep=1).logits[:, -1].float()
        log_probs = scores.log_softmax(-1)
        alpha = -(log_probs.exp() * log_probs).sum(-1, keepdim=True)
        return (1 + alpha) * scores - alpha * masked

    return torch.no_grad()(processor)


@register_technique("decore")
class DeCoRe(Technique):
    family = "decoding"

    def __init__(self, retrieval_heads: int = 10, trials: int = 8, seed: int = 0):
        self.retrieval_heads, self.trials, self.seed = retrieval_heads, trials, seed

    def params(self):
        return {"retrieval_heads": self.retrieval_heads, "trials": self.trials, "seed": self.seed}

    def heads(self, context) -> dict[int, list[int]]:
        runner = context.runner
        store = FitStore(context.fit_dir)
        key = {"model": runner.loaded.identity, **self.params()}
        found = store.load("decore", key)
        if found is None:
            layout = hooks.head_layout(runner.model)
            avoid = set(runner.tokenizer.all_special_ids)
            scores = retrieval_scores(runner.model, runner.model.config.vocab_size, self.trials, seed=self.seed,
                                      avoid=avoid)
            count = min(self.retrieval_heads, max(1, layout.num_layers * layout.num_heads // 4))
            flat = sorted(range(scores.numel()), key=lambda h: (-float(scores.flatten()[h]), h))[:count]
            selected = [[h // layout.num_heads, h % layout.num_heads] for h in flat]
            store.save("decore", key, {"scores": scores}, {"heads": selected})
        else:
            selected = found[1]["heads"]
        by_layer: dict[int, list[int]] = {}
        for layer, head in selected:
            by_layer.setdefault(int(layer), []).append(int(head))
        return by_layer

    def run(self, context, items):
        masked = self.heads(context)
        intervention = Intervention(key=stable_hash(["decore", self.params(), sorted(masked.items())]),
                                    logits_processor=entropy_contrast(context.runner.model, context.runner.pad_id, masked))
        detail = {"masked_heads": [[layer, head] for layer, heads in sorted(masked.items()) for head in heads]}
        return greedy_answers(context, [context.answer_prompt(i.question) for i in items], items, intervention,
                              detail=[detail for _ in items])
