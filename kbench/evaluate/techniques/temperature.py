"""Temperature sampling baselines (MAPLE's tau_0.7 and tau_1.2): `votes` samples per item at the
temperature with seed B = 0, final answer by majority vote (MAPLE: 10 samples).

The sampling scheme is temperature plus optional top-k / top-p truncation (`top_k` None and
`top_p` 1.0: plain temperature sampling, the default; MAPLE names no truncation). The same
scheme must draw the shallow/deep partition's seed-A samples, which the KEE evaluation does
with `sampling_intervention`. PRS rank: read on the baseline prompt, unchanged by sampling.
"""

from __future__ import annotations

from pydantic import Field

from kbench.evaluate.techniques import register_technique
from kbench.evaluate.techniques.base import (
    ANSWER_STOP,
    MAX_ANSWER_TOKENS,
    Technique,
    TechniqueOutput,
    TechniqueParams,
    clean_answer,
    majority_vote,
)
from kbench.io import stable_hash
from kbench.models.interface import Intervention, SamplingTruncation

SEED_B = 0


def sampling_intervention(temperature: float, top_k: int | None, top_p: float) -> Intervention | None:
    """The top-k / top-p truncation as a decoding change for `sample` (None when there is
    nothing to truncate, so plain temperature sampling keeps its cache entries)."""
    if top_k is None and top_p >= 1.0:
        return None
    return Intervention(
        key=stable_hash(["sampling-scheme", temperature, top_k, top_p]),
        logits=SamplingTruncation(temperature, top_k, top_p),
    )


class SamplingParams(TechniqueParams):
    temperature: float = Field(gt=0)  # softmax temperature of every draw
    votes: int = Field(10, ge=1)  # samples per item (MAPLE: 10), majority vote
    seed: int = SEED_B  # MAPLE's seed B
    top_k: int | None = Field(None, ge=1)  # keep the k most likely tokens (None: all)
    top_p: float = Field(1.0, gt=0, le=1)  # nucleus mass (1.0: no truncation)


@register_technique("temp0.7", temperature=0.7)
@register_technique("temp1.2", temperature=1.2)
class TemperatureSampling(Technique):
    family = "sampling"
    Params = SamplingParams

    def run(self, context, items):
        p = self.p
        prompts = [context.answer_prompt(i.question) for i in items]
        samples = context.model.sample(
            prompts,
            k=p.votes,
            temperature=p.temperature,
            seed=p.seed,
            max_new_tokens=MAX_ANSWER_TOKENS,
            stop=ANSWER_STOP,
            intervention=sampling_intervention(p.temperature, p.top_k, p.top_p),
        )
        ranks = context.ranks(prompts, [context.gold(i) for i in items])
        out = []
        for texts, (rank, logprob) in zip(samples, ranks):
            answers = [clean_answer(t) for t in texts]
            out.append(TechniqueOutput(majority_vote(answers), rank, logprob, {"samples": answers}))
        return out
