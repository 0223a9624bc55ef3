"""RECITE: recitation-augmented answering (Sun et al., 2023, "Recitation-Augmented Language
Models"; as configured in MAPLE, Appendix B).

Stage 1 recites a passage about the question; stage 2 answers with the recitation in the
prompt. MAPLE runs both stages 20 times and takes the majority answer. Twenty identical greedy
recitations would make the vote meaningless, so the recitations are sampled (self-consistency,
as in RECITE) at `recite_temperature` = 0.7 with seed 0, while every answer is greedy.
With runs = 1 the recitation is greedy too.

Vote (`vote`): answers are grouped after MAPLE normalisation; the largest group wins, a tie
goes to the group whose first answer came earliest (run order), and the final answer is that
group's first answer as written. PRS rank: read on the answer prompt of that same run.

Parameters: runs = 20 (configurable), recite_temperature = 0.7, recitation_tokens = 64.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from kbench.protocol import Deviation
from kbench.tasks.kee.techniques import register_technique
from kbench.tasks.kee.techniques.base import (
    Technique,
    TechniqueOutput,
    TechniqueParams,
    clean_answer,
    winning_index,
)

MAPLE_RUNS = 20
PASSAGE_STOP = ["\n\n", "Question:"]
RECITE_INSTRUCTION = "Recite a short passage from Wikipedia that contains the answer to the question."


def vote(runs: Sequence[tuple[str, int, float]]) -> TechniqueOutput:
    """The majority answer over (answer, gold rank, gold logprob) runs, with the rank and logprob
    of the first run that gave it."""
    answers = [clean_answer(text) for text, _, _ in runs]
    winner = winning_index(answers)
    _, rank, logprob = runs[winner]
    return TechniqueOutput(answers[winner], rank, logprob, {"answers": answers, "winning_run": winner})


class ReciteParams(TechniqueParams):
    runs: int = Field(20, ge=1)  # recite-and-answer runs in the vote (MAPLE: 20)
    recite_temperature: float = Field(0.7, gt=0)  # sampling temperature of the recitations
    recitation_tokens: int = Field(64, ge=1)  # longest recitation
    seed: int = 0  # seeds the recitation samples


@register_technique("recite")
class Recite(Technique):
    family = "prompting"
    Params = ReciteParams

    def deviations(self, fitted):
        p, out = self.p, []
        if p.runs > 1:
            out.append(
                Deviation(
                    "recite-sampled-recitations",
                    paper="20 runs and a majority vote under greedy decoding; how the runs differ is not stated",
                    kbench=f"recitations sampled at temperature {p.recite_temperature} (seed {p.seed}), answers greedy, "
                    "so the vote is not over identical greedy runs",
                    effect="recite: every number",
                )
            )
        if p.runs != MAPLE_RUNS:
            how = "one greedy recitation, no vote" if p.runs == 1 else "majority vote"
            out.append(
                Deviation(
                    "recite-runs",
                    paper=f"{MAPLE_RUNS} recite-and-answer runs, majority vote",
                    kbench=f"{p.runs} run{'s' if p.runs != 1 else ''} ({how})",
                    effect="recite: every number",
                )
            )
        return out

    def run(self, context, items):
        p, model = self.p, context.model
        stage1 = [context.task_prompt(RECITE_INSTRUCTION, i.question, "Passage") for i in items]
        if p.runs == 1:
            recitations = [[t] for t in model.generate(stage1, p.recitation_tokens, PASSAGE_STOP)]
        else:
            recitations = model.sample(
                stage1,
                k=p.runs,
                temperature=p.recite_temperature,
                seed=p.seed,
                max_new_tokens=p.recitation_tokens,
                stop=PASSAGE_STOP,
            )
        prompts = [
            context.answer_prompt(item.question, passage) for item, passages in zip(items, recitations) for passage in passages
        ]
        golds = [context.gold(item) for item in items for _ in range(p.runs)]
        results = context.answers_and_ranks(prompts, golds)
        out = []
        for n, passages in enumerate(recitations):
            output = vote(results[n * p.runs : (n + 1) * p.runs])
            output.detail["recitations"] = passages
            out.append(output)
        return out
