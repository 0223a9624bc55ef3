"""`judge_domain`: MAPLE's domain-mismatch judge, optional (off unless a judge model is given).

MAPLE, Section 3.1 (Stage 2): "We discard instances with domain mismatches via LLM-based
filtering; specifically, we remove overly generic triplets that do not reflect their document's
assigned domain." The paper does not print this prompt, so the wording below is kbench's, built
from that sentence. It runs after `domain_taxonomy` (which gives `domain`, the document's
domain where known). A reply starting "no" drops the row as `domain_mismatch_judged`; "yes"
keeps it. Shared behaviour (model, prompt form, unparseable replies): `_llm_judge`.
"""

from __future__ import annotations

from kbench.construct.stage import register_stage
from kbench.construct.stages._llm_judge import LlmJudge

PROMPT = (
    "You check facts for a knowledge benchmark. Each fact is a (subject, relation, object) triplet "
    "extracted from a document about {domain}. Overly generic triplets that do not reflect the "
    "document's domain are removed.\n"
    "Triplet: ({subject}; {relation}; {object})\n"
    "Does this triplet reflect the domain {domain}? Reply yes or no, then give a short reason."
)


@register_stage
class JudgeDomain(LlmJudge):
    name = "judge_domain"
    verdicts = {"yes": "fits", "no": "mismatch"}
    drop_verdict, drop_reason = "mismatch", "domain_mismatch_judged"
    slug, paper_step = "domain-judge", "MAPLE drops triplets that do not reflect their document's domain"
    needed_columns = ("domain", "subject", "object")

    def question(self, row: dict) -> str:
        relation = row.get("relation_label") or row.get("relation") or "?"
        return PROMPT.format(
            domain=row["domain"] or "an unknown domain", subject=row["subject"], relation=relation, object=row["object"]
        )
