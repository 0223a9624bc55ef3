"""Temperature sampling baselines (MAPLE, Section 3.2 / 4: tau = 0.7 and tau = 1.2).

Parameters: temperature (0.7 or 1.2), votes = 10 samples drawn with seed B = 0, answer =
majority vote over them. Temperature does not reorder the vocabulary, so the gold rank is the
greedy prompt's rank. The shallow/deep partition samples (seed A = 42) are drawn by the KEE
evaluation, not here.
"""

from __future__ import annotations

from kbench.evaluate.techniques import register_technique
from kbench.evaluate.techniques.base import (ANSWER_STOP, MAX_ANSWER_TOKENS, Technique, TechniqueOutput, clean_answer,
                                             majority_vote)

SEED_B = 0


@register_technique("temp0.7", temperature=0.7)
@register_technique("temp1.2", temperature=1.2)
class TemperatureSampling(Technique):
    family = "sampling"

    def __init__(self, temperature: float, votes: int = 10, seed: int = SEED_B):
        self.temperature, self.votes, self.seed = temperature, votes, seed

    def params(self):
        return {"temperature": self.temperature, "votes": self.votes, "seed": self.seed}

    def run(self, context, items):
        prompts = [context.answer_prompt(i.question) for i in items]
        samples = context.runner.sample(prompts, k=self.votes, temperature=self.temperature, seed=self.seed,
                                        max_new_tokens=MAX_ANSWER_TOKENS, stop=ANSWER_STOP)
        ranks = context.runner.rank_first_token(prompts, [context.gold(i) for i in items])
        out = []
        for texts, (rank, logprob) in zip(samples, ranks):
            answers = [clean_answer(t) for t in texts]
            out.append(TechniqueOutput(majority_vote(answers), rank, logprob, {"samples": answers}))
        return out
