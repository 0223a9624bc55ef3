"""`judge_single_answer`: MAPLE's LLM single-answer classification, optional (off unless a judge model is given).

MAPLE, Section 3.1 (Stage 2): "we restrict our benchmark strictly to single-answer triplets using
the Wikidata SPARQL API and LLM-based classification; multi-answer cases introduce evaluation
ambiguity by conflating a model's lack of knowledge with its preference for an alternative valid
entity." The SPARQL count is `single_answer`; this stage is the classification, run after it. The
paper does not print the prompt, so the wording below is kbench's, built from that sentence. A
reply starting "no" (not exactly one correct answer) drops the row as `multiple_answers_judged`;
"yes" keeps it. Shared
behaviour (model, prompt form, unparseable replies): `_llm_judge`.
"""

from __future__ import annotations

from kbench.construct.stage import register_stage
from kbench.construct.stages._llm_judge import LlmJudge

PROMPT = (
    "You check questions for a knowledge benchmark. A question is kept only when it has exactly one "
    "correct answer; a question with several valid answers is ambiguous.\n"
    "Question: what is the {relation} of {subject}?\n"
    "Example answer: {object}\n"
    "Does this question have exactly one correct answer? Reply yes or no, then give a short reason."
)


@register_stage
class JudgeSingleAnswer(LlmJudge):
    name = "judge_single_answer"
    verdicts = {"yes": "single", "no": "multiple"}
    drop_verdict, drop_reason = "multiple", "multiple_answers_judged"
    slug, paper_step = "single-answer-judge", "MAPLE keeps single-answer triplets by LLM classification beside the SPARQL count"
    needed_columns = ("subject", "object")

    def question(self, row: dict) -> str:
        relation = row.get("relation_label") or row.get("relation") or "?"
        return PROMPT.format(relation=relation, subject=row["subject"], object=row["object"])
