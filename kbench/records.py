"""The dataset rows of each record schema (`kbench/schemas/<name>.v1.json`) as typed dicts.

A row stays a dict: it is read from parquet and written to JSON as it is, so a `TypedDict` adds
types for the checker and changes no bytes. `open_split(..., schema="question.v1.json")` returns
a `Split[Question]`. Keys the schema requires are required here; the schema's other properties
are `NotRequired`. Datasets may carry further columns, which these types do not name.

`SCHEMAS` pairs each schema file with its type; `tests/unit/test_records.py` checks that they
agree (names, required or not, basic types), so neither drifts from the other.
"""

# No `from __future__ import annotations`: TypedDict reads NotRequired from evaluated annotations
# (`__required_keys__`), which the schema test compares.
from typing import Literal, NotRequired, TypedDict


class Question(TypedDict):
    """`question.v1.json`: one LAMA- or MAPLE-style item (extraction, choice, kee, xteval)."""

    id: str
    relation: str
    wikidata_property: NotRequired[str | None]
    relation_label: str
    template: str
    subject: str
    subject_id: str | None
    object: str
    object_id: str | None
    source: str
    evidence_count: NotRequired[int | None]
    subject_aliases: list[str]
    object_aliases: list[str]
    answers: list[str]
    prompt_cloze: str
    prompt_masked: str
    question: str
    frequency: float | None
    frequency_bin: Literal["head", "torso", "tail"] | None
    domain: NotRequired[str | None]
    split: Literal["train", "dev", "test"]


class Statement(TypedDict):
    """`statement.v1.json`: one LEFT true/false statement (truefalse)."""

    id: str
    pair_id: str
    statement: str
    label: bool
    option: str
    correct_option: str
    form: Literal["fill_blank", "subject_question", "fallback"]
    word_overlap: float
    book: str
    license: NotRequired[str]
    chapter: int
    chapter_title: NotRequired[str]
    section: str
    section_title: NotRequired[str]
    split: Literal["dev", "test"]
    question: str
    paragraphs: list[str]
    paragraph_ids: list[str]


class QAItem(TypedDict):
    """`qa_item.v1.json`: one EvolvingQA-style knowledge-update item (qa)."""

    id: str
    relation: str
    relation_label: str
    subject: str
    subject_id: str | None
    question: str
    answer: str
    answer1: str | None
    answer2: str
    object_id: str | None
    old_object_id: str | None
    category: Literal["unchanged", "new", "edited"]
    split: Literal["unchanged", "new", "edited"]
    synthetic_edit: bool
    old_date: str
    new_date: str


#: Each record schema (a file of `kbench/schemas/`) and the type of its rows.
SCHEMAS: dict[str, type] = {
    "question.v1.json": Question,
    "statement.v1.json": Statement,
    "qa_item.v1.json": QAItem,
}
