"""The choice task: Settings, plan, score, aggregate (the shape of `kbench.evaluate.task.Task`).

Input: a dataset folder of Question rows (`schemas/question.v1.json`: relation, template, subject,
object; `domain` when the dataset has one), e.g. `kbench build lama`. Plan: the `--limit` sample
(seeded, as every task draws it), grouped by relation; units of UNIT_ITEMS items of one relation,
so a unit's items share their answer space and template. Score: every candidate of the space in
the item's statement (`scoring`); the item keeps its whole score vector, its prediction and its
gold's rank. Aggregate: `metrics.summary` and the protocol record (`protocol`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

from pydantic import Field, field_validator

from kbench.dataset import open_split, seeded_sample
from kbench.evaluate.task import TASKS, Plan, RunContext, Summary, Task, TaskSettings, Unit, chunks
from kbench.io import stable_hash
from kbench.models.interface import Capability
from kbench.records import Question
from kbench.tasks.choice import answers
from kbench.tasks.choice.metrics import predicted_index, rank_of, summary
from kbench.tasks.choice.protocol import choice_protocol
from kbench.tasks.choice.report import prior_bias_section
from kbench.tasks.choice.scoring import score_candidates

UNIT_ITEMS = 32  # items per journalled unit; the model batches every candidate of a unit together


class ChoiceSettings(TaskSettings):
    score: Literal["statement", "answer"] = Field(
        "statement", description="Tokens a candidate's score counts: the whole statement, or the candidate's own."
    )
    reduction: Literal["sum", "mean"] = Field("sum", description="Token log-likelihoods summed, or averaged.")
    answer_space: str | None = Field(
        None,
        description="JSON file: relation -> candidate labels (or lm-pub-quiz's metadata_relations.json); "
        "default: each relation's objects in the split.",
    )
    top_k: tuple[int, ...] = Field(
        (5, 10), description="Report P@k for these k (accuracy is P@1).", json_schema_extra={"comma": True}
    )

    @field_validator("top_k")
    @classmethod
    def _positive(cls, ks: tuple[int, ...]) -> tuple[int, ...]:
        if not ks or any(k < 1 for k in ks):
            raise ValueError("give one or more k >= 1")
        return tuple(sorted(set(ks)))


@dataclass(frozen=True)
class ChoicePlan:
    spaces: dict[str, tuple[str, ...]]  # relation -> candidates, the order of every score vector
    start: str  # the text every statement follows (the model's BOS token)
    start_kind: str  # "bos", "eos" or "none" (`LanguageModel.sequence_start`)
    spaces_from_file: bool
    sources: list[str]  # the rows' `source` values, for the protocol record


class ChoiceItemRow(TypedDict):
    """One item's row (items.jsonl / items.parquet), in this key order."""

    id: str
    relation: str
    relation_label: str
    domain: str | None
    subject: str
    object: str
    template: str
    prediction: str  # the top-scoring candidate
    correct: bool
    gold_rank: int  # 1 = the gold scored highest
    gold_score: float
    prediction_score: float
    answer_space_size: int
    scores: list[float]  # over metrics.answer_spaces[relation], in its order


def _by_relation(rows: list[Question]) -> dict[str, list[Question]]:
    out: dict[str, list[Question]] = {}
    for row in rows:
        out.setdefault(row["relation"], []).append(row)
    return out


@TASKS.register()
class Choice(Task[ChoiceSettings]):
    """Rank every candidate of each relation's answer space by the log-likelihood of its statement
    (lm-pub-quiz's BEAR probe); --answer-space FILE gives the candidates, else each relation's objects
    in the split; --top-k 5,10 adds P@k; rerunning the same command resumes where it stopped."""

    Settings = ChoiceSettings
    primary_metric = ("accuracy",)

    def needs(self, settings: ChoiceSettings) -> dict[str, frozenset[Capability]]:
        return {"task choice": frozenset({Capability.LOGLIKELIHOOD})}  # statements' log-likelihoods, teacher-forced

    def plan(self, ctx: RunContext[ChoiceSettings]) -> Plan:
        s = ctx.settings
        split = open_split(ctx.dataset, s.split, s.config, schema="question.v1.json")
        if s.answer_space is not None:
            spaces, where = answers.from_file(Path(s.answer_space)), f"--answer-space {s.answer_space}"
        else:
            spaces, where = answers.from_rows(split.rows), str(split.path)  # the whole split, before the sample
        rows = seeded_sample(split.rows, s.limit, s.seed)
        answers.check_items(rows, spaces, where, str(split.path))
        start, start_kind = ctx.model.sequence_start()
        groups = _by_relation(rows)
        units = [u for rel, members in groups.items() for u in chunks(members, UNIT_ITEMS, f"{rel}-", {"relation": rel})]
        used = {rel: spaces[rel] for rel in groups}
        sources = sorted({r.get("source") or "unknown" for r in rows})
        state = ChoicePlan(used, start, start_kind, s.answer_space is not None, sources)
        depends = {"answer_spaces": stable_hash({rel: list(space) for rel, space in used.items()}), "start": start}
        return Plan(units=units, dataset=split.describe(), depends_on=depends, state=state)

    def score(self, ctx: RunContext[ChoiceSettings], state: ChoicePlan, unit: Unit) -> list[ChoiceItemRow]:
        s = ctx.settings
        space = state.spaces[unit.meta["relation"]]
        items: list[Question] = unit.items  # the split's rows of one relation (`plan`)
        vectors = score_candidates(ctx.model, state.start, items, space, s.score, s.reduction)
        out: list[ChoiceItemRow] = []
        for row, scores in zip(items, vectors):
            gold, best = space.index(row["object"]), predicted_index(scores)
            out.append(
                {
                    "id": row["id"],
                    "relation": row["relation"],
                    "relation_label": row.get("relation_label") or "",
                    "domain": row.get("domain"),
                    "subject": row["subject"],
                    "object": row["object"],
                    "template": row["template"],
                    "prediction": space[best],
                    "correct": best == gold,
                    "gold_rank": rank_of(scores, gold),
                    "gold_score": scores[gold],
                    "prediction_score": scores[best],
                    "answer_space_size": len(space),
                    "scores": scores,  # over metrics.answer_spaces[relation], in its order
                }
            )
        return out

    def aggregate(self, ctx: RunContext[ChoiceSettings], state: ChoicePlan, rows: list[dict]) -> Summary:
        s = ctx.settings
        numbers = summary(rows, s.top_k)
        metrics = {
            "score": s.score,
            "reduction": s.reduction,
            "start_token": state.start_kind,
            "top_k": list(s.top_k),
            "answer_spaces": {rel: list(space) for rel, space in state.spaces.items()},
            "relation_labels": {r["relation"]: r["relation_label"] for r in rows},
            **numbers,
        }
        headline = {"accuracy": numbers["overall"]["accuracy"], "accuracy_macro": numbers["accuracy_macro"]}
        headline.update({f"p_at_{k}": numbers["overall"][f"p_at_{k}"] for k in s.top_k})
        protocol = choice_protocol(s, state.sources, state.spaces_from_file, state.start_kind)
        return Summary(headline=headline, metrics=metrics, protocol=protocol)

    def report_section(self, run) -> str:
        return prior_bias_section(run)
