"""KEE's item rows: one per (technique or partition temperature, item), every row with every column
(`item_row`); a technique's outputs scored by MAPLE's match (`output_rows`); the shallow/deep
partition's seed-A samples (`partition_rows`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from kbench.metrics.matching import exact_match, maple_correct
from kbench.tasks.kee.techniques.base import ANSWER_STOP, MAX_ANSWER_TOKENS, KeeContext, KeeItem, clean_answer

SEED_A = 42
PARTITION = "partition"


def to_item(row: Mapping[str, Any]) -> KeeItem:
    """A `Question` row (`kbench.records`) as a KEE item; the fitting pool's rows are read unchecked."""
    answers = [a for a in (row.get("answers") or []) if a] or [row["object"]]
    if row["object"] in answers:
        answers.remove(row["object"])
    return KeeItem(
        id=str(row["id"]),
        question=row["question"],
        answers=(row["object"], *answers),
        relation=row.get("relation") or "",
        frequency_bin=row.get("frequency_bin"),
    )


class KeeItemRow(TypedDict):
    """One row of items.jsonl / items.parquet, in this key order; a stage leaves its other columns None."""

    id: str  # <stage>::<item id>
    technique: str  # the stage: a technique, or partition@<temperature>
    item_id: str
    relation: str
    frequency_bin: str | None
    question: str
    answers: list[str]  # gold first, then aliases
    answer: str | None
    correct: bool | None
    exact: bool | None
    gold_rank: int | None
    gold_logprob: float | None
    sample_correct: list[bool] | None
    detail: str  # JSON: the technique's detail, or the partition's samples


def item_row(
    stage: str,
    item: KeeItem,
    *,
    detail: str,
    answer: str | None = None,
    correct: bool | None = None,
    exact: bool | None = None,
    gold_rank: int | None = None,
    gold_logprob: float | None = None,
    sample_correct: list[bool] | None = None,
) -> KeeItemRow:
    """One item row of a stage (technique or partition temperature); every row has every column."""
    return {
        "id": f"{stage}::{item.id}",
        "technique": stage,
        "item_id": item.id,
        "relation": item.relation,
        "frequency_bin": item.frequency_bin,
        "question": item.question,
        "answers": list(item.answers),
        "answer": answer,
        "correct": correct,
        "exact": exact,
        "gold_rank": gold_rank,
        "gold_logprob": gold_logprob,
        "sample_correct": sample_correct,
        "detail": detail,
    }


def output_rows(name: str, items: Sequence[KeeItem], outputs, case_sensitive: bool) -> list[KeeItemRow]:
    return [
        item_row(
            name,
            item,
            answer=out.answer,
            correct=maple_correct(out.answer, item.answers, case_sensitive=case_sensitive),
            exact=exact_match(out.answer, item.answers, case_sensitive=case_sensitive),
            gold_rank=None if out.gold_rank is None else int(out.gold_rank),
            gold_logprob=None if out.gold_logprob is None else float(out.gold_logprob),
            sample_correct=None
            if out.recovery_samples is None
            else [maple_correct(a, item.answers, case_sensitive=case_sensitive) for a in out.recovery_samples],
            detail=json.dumps(out.detail, ensure_ascii=False, sort_keys=True),
        )
        for item, out in zip(items, outputs)
    ]


def partition_rows(
    context: KeeContext, items: Sequence[KeeItem], temperature: float, n_samples: int, case_sensitive: bool, intervention=None
) -> list[KeeItemRow]:
    samples = context.model.sample(
        [context.answer_prompt(i.question) for i in items],
        k=n_samples,
        temperature=temperature,
        seed=SEED_A,
        max_new_tokens=MAX_ANSWER_TOKENS,
        stop=ANSWER_STOP,
        intervention=intervention,
    )  # the sampling scheme's truncation
    name = f"{PARTITION}@{temperature}"
    rows: list[KeeItemRow] = []
    for item, texts in zip(items, samples):
        answers = [clean_answer(t) for t in texts]
        correct = [maple_correct(a, item.answers, case_sensitive=case_sensitive) for a in answers]
        rows.append(item_row(name, item, sample_correct=correct, detail=json.dumps({"samples": answers}, ensure_ascii=False)))
    return rows
