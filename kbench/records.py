"""The typed records that flow between build and evaluation.

Tables carry these as columns; the classes document the contract and validate single rows
where that helps (tests, readers). The JSON Schema of each published record lives in
`schemas/` with a version; `QUESTION_SCHEMA` names the current one.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict

QUESTION_SCHEMA = "schemas/question.v1.json"


class Fact(BaseModel):
    """A (subject, relation, object) fact as loaded from a source, before questions exist."""

    model_config = ConfigDict(extra="allow")
    id: str                      # stable id (LAMA uuid, or a hash of the triple)
    relation: str                # Wikidata property id, e.g. "P19"
    relation_label: str = ""
    template: str = ""           # cloze template with [X] (subject) and [Y] (object)
    subject: str
    subject_id: Optional[str] = None   # Wikidata Q-id
    object: str
    object_id: Optional[str] = None
    source: str = ""             # e.g. "trex", "google_re", "autoprompt_train"
    evidence_count: Optional[int] = None  # None when the source has no evidence sentences (AutoPrompt)


class Question(Fact):
    """One benchmark item, the row type of every LAMA-style / MAPLE-style dataset split.

    `prompt_cloze` is the template with [X] filled and the text before [Y] only (a causal LM
    continues it); `prompt_masked` has [Y] replaced by the literal "[MASK]" (masked LMs);
    `question` is a short-answer question form. `answers` = the gold object label plus aliases.
    """

    subject_aliases: list[str] = []
    object_aliases: list[str] = []
    answers: list[str] = []
    prompt_cloze: str
    prompt_masked: str = ""
    question: str
    frequency: Optional[float] = None
    frequency_bin: Optional[str] = None   # "head" | "torso" | "tail"
    domain: Optional[str] = None
    split: str = "test"
