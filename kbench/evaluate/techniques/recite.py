"""RECITE: recitation-augmented answering (Sun et al., 2023, "Recitation-Augmented Language
Models"; as configured in MAPLE, Appendix B).

Stage 1 recites a passage about the question; stage 2 answers with the recitation in the
prompt. MAPLE runs both stages 20 times and takes the majority answer. Twenty identical greedy
recitations would make the vote meaningless, so the recitations are sampled (self-consistency,
as in RECITE) at `recite_temperature` = 0.7 with seed 0, while every answer is greedy.
With runs = 1 the recitation is greedy too.

Parameters: runs = 20 (configurable), recite_temperature = 0.7, recitation_tokens = 64.
PRS rank: read on the answer prompt of the first run whose answer won the vote.
"""

from __future__ import annotations

from kbench.evaluate.techniques import register_technique
from kbench.evaluate.techniques.base import (ANSWER_STOP, MAX_ANSWER_TOKENS, Technique, TechniqueOutput, clean_answer,
                                             majority_vote)

PASSAGE_STOP = ["\n\n", "Question:"]
RECITE_INSTRUCTION = "Recite a short passage from Wikipedia that contains the answer to the question."


@register_technique("recite")
class Recite(Technique):
    family = "prompting"

    def __init__(self, runs: int = 20, recite_temperature: float = 0.7, recitation_tokens: int = 64, seed: int = 0):
        self.runs, self.recite_temperature, self.recitation_tokens, self.seed = runs, recite_temperature, recitation_tokens, seed

    def params(self):
        return {"runs": self.runs, "recite_temperature": self.recite_temperature,
                "recitation_tokens": self.recitation_tokens, "seed": self.seed}

    def run(self, context, items):
        runner = context.runner
        stage1 = [context.task_prompt(RECITE_INSTRUCTION, i.question, "Passage") for i in items]
        if self.runs == 1:
            recitations = [[t] for t in runner.generate(stage1, self.recitation_tokens, PASSAGE_STOP)]
        else:
            recitations = runner.sample(stage1, k=self.runs, temperature=self.recite_temperature, seed=self.seed,
                                        max_new_tokens=self.recitation_tokens, stop=PASSAGE_STOP)
        prompts = [context.answer_prompt(item.question, passage)
                   for item, passages in zip(items, recitations) for passage in passages]
        golds = [context.gold(item) for item in items for _ in range(self.runs)]
        results = runner.generate_and_rank(prompts, golds, MAX_ANSWER_TOKENS, ANSWER_STOP)
        out = []
        for n, passages in enumerate(recitations):
            runs = results[n * self.runs:(n + 1) * self.runs]
            answers = [clean_answer(text) for text, _, _ in runs]
            winner = majority_vote(answers)
            _, rank, logprob = runs[answers.index(winner)]
            out.append(TechniqueOutput(winner, rank, logprob, {"recitations": passages, "answers": answers}))
        return out
