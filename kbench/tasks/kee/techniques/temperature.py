"""Temperature sampling baselines (MAPLE's tau_0.7 and tau_1.2).

One call draws `max(votes, recovery_samples)` samples per item at the temperature with seed B = 0
(`sample` gives the first n samples of a larger draw unchanged, and prefills each prompt once for
all of them):

- the final answer (Acc, Gain, Loss, PRS) is the majority vote over the first `votes` samples
  (MAPLE: "For temperature sampling, the final answer is determined via majority voting across
  10 samples");
- the first `recovery_samples` samples are the "K new samples with an independent seed (Seed B =
  0)" that MAPLE draws for SGR / DGR. MAPLE does not say when they recover an item; kbench's
  reading (the `sgr-recovery-rule` interpretation) is any of the first K correct, and the KEE task
  also reports a majority of K and one sample (docs/definitions.md, "recovered"). The task asks
  for as many as its K sweep needs; 0 (the `sgr-majority-vote` option) draws none and SGR / DGR
  read the vote instead.

The sampling scheme is temperature plus optional top-k / top-p truncation (`top_k` None and
`top_p` 1.0: plain temperature sampling, the default; MAPLE names no truncation). The same
scheme must draw the shallow/deep partition's seed-A samples, which the KEE evaluation does
with `sampling_intervention`. PRS rank: read on the baseline prompt, unchanged by sampling, so the task
reports their PRS as undefined (`metrics.SAMPLING_PRS_UNDEFINED`).
"""

from __future__ import annotations

from pydantic import Field

from kbench.io import stable_hash
from kbench.models.interface import Intervention, SamplingTruncation
from kbench.protocol import departures
from kbench.tasks.kee.techniques import register_technique
from kbench.tasks.kee.techniques.base import (
    ANSWER_STOP,
    MAX_ANSWER_TOKENS,
    Technique,
    TechniqueOutput,
    TechniqueParams,
    clean_answer,
    majority_vote,
)

SEED_B = 0
MAPLE_VOTES = 10


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
    votes: int = Field(MAPLE_VOTES, ge=1)  # samples in the majority vote (MAPLE: 10)
    recovery_samples: int = Field(0, ge=0)  # seed-B samples kept for SGR / DGR (the task sets its K sweep; 0: none)
    seed: int = SEED_B  # MAPLE's seed B
    top_k: int | None = Field(None, ge=1)  # keep the k most likely tokens (None: all)
    top_p: float = Field(1.0, gt=0, le=1)  # nucleus mass (1.0: no truncation)


@register_technique("temp0.7", temperature=0.7)
@register_technique("temp1.2", temperature=1.2)
class TemperatureSampling(Technique):
    family = "sampling"
    Params = SamplingParams

    def deviations(self, fitted):
        p = self.p
        return departures(
            (f"{self.name}-votes", p.votes, MAPLE_VOTES, f"the final answer is the majority vote over {MAPLE_VOTES} samples",
             f"majority vote over {p.votes} samples", f"{self.name}: Acc, Gain, Loss, PRS"),
            (f"{self.name}-seed-b", p.seed, SEED_B, f"the evaluation samples are drawn with seed B = {SEED_B}",
             f"seed {p.seed}", f"{self.name}: every number"),
        )  # fmt: skip

    def run(self, context, items):
        p = self.p
        prompts = [context.answer_prompt(i.question) for i in items]
        samples = context.model.sample(
            prompts,
            k=max(p.votes, p.recovery_samples),
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
            recovery = answers[: p.recovery_samples] if p.recovery_samples else None
            detail = {"samples": answers, "votes": p.votes}
            out.append(TechniqueOutput(majority_vote(answers[: p.votes]), rank, logprob, detail, recovery))
        return out
