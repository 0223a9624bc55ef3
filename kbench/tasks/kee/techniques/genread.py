"""GenRead: generate-then-read (Yu et al., 2023, "Generate rather than Retrieve"; as configured
in MAPLE, Appendix B).

Stage 1 generates a background document for the question (greedy); stage 2 answers with the
document in the prompt (greedy). PRS rank: read on the stage-2 answer prompt.

Parameters: document_tokens = 96.
"""

from __future__ import annotations

from pydantic import Field

from kbench.tasks.kee.techniques import register_technique
from kbench.tasks.kee.techniques.base import Technique, TechniqueParams, greedy_answers

DOCUMENT_STOP = ["\n\n", "Question:"]


GENREAD_INSTRUCTION = "Generate a background document from Wikipedia to answer the given question."


class GenReadParams(TechniqueParams):
    document_tokens: int = Field(96, ge=1)  # longest background document (greedy)


@register_technique("genread")
class GenRead(Technique):
    family = "prompting"
    Params = GenReadParams

    def run(self, context, items):
        documents = context.model.generate(
            [context.task_prompt(GENREAD_INSTRUCTION, i.question, "Document") for i in items],
            max_new_tokens=self.p.document_tokens,
            stop=DOCUMENT_STOP,
        )
        prompts = [context.answer_prompt(i.question, d) for i, d in zip(items, documents)]
        return greedy_answers(context, prompts, items, detail=[{"document": d} for d in documents])
