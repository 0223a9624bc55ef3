"""One pass of the probe through a model, and the item-by-item comparison of two passes.

A pass asks what a task asks (`kbench.models.interface`): the greedy answer (`generate`), the gold's
first-token rank and log-prob (`rank_first_token`) where the model ranks, and the gold's
log-likelihood (`score_answers`) where it scores. Values a model cannot give are None. The model is
opened without a result cache (`kbench check` opens it so): a cached value would make every repeat
identical."""

from __future__ import annotations

from dataclasses import dataclass

from kbench.check.probe import MAX_NEW_TOKENS, STOP, ProbeItem
from kbench.models.interface import Capability


def ranks(model) -> bool:
    return bool({Capability.RANK_EXACT, Capability.RANK_TOP_K} & set(model.info.capabilities))


def scores(model) -> bool:
    return Capability.LOGLIKELIHOOD in model.info.capabilities


@dataclass
class Pass:
    ids: list[str]
    answers: list[str]
    ranks: list[int | None] | None  # the gold's first-token rank (None beyond a server's top k)
    rank_logprobs: list[float | None] | None  # the gold's first-token log-prob, from the ranking request
    first_logprobs: list[float] | None  # the gold's first-token log-prob, from the scoring request
    logprobs: list[float] | None  # the gold's whole log-likelihood


def run_pass(model, items: list[ProbeItem], *, one_by_one: bool = False, reverse: bool = False) -> Pass:
    """The probe through `model`: in one call per method (the backend's own batching), one call per
    item (`one_by_one`: batch size 1), or with the items sent in reverse order (`reverse`)."""
    order = list(reversed(items)) if reverse else list(items)
    groups = [[item] for item in order] if one_by_one else [order]
    answers, rank_rows, score_rows = [], [], []
    for group in groups:
        prompts, golds = [i.prompt for i in group], [i.gold for i in group]
        answers += model.generate(prompts, MAX_NEW_TOKENS, stop=list(STOP))
        if ranks(model):
            rank_rows += model.rank_first_token(prompts, golds)
        if scores(model):
            score_rows += model.score_answers(prompts, golds)
    back = (lambda values: list(reversed(values))) if reverse else list
    answers = back(answers)
    rank_rows, score_rows = back(rank_rows), back(score_rows)
    return Pass(
        ids=[i.id for i in items],
        answers=answers,
        ranks=[r for r, _ in rank_rows] if ranks(model) else None,
        rank_logprobs=[lp for _, lp in rank_rows] if ranks(model) else None,
        first_logprobs=[per[0] if per else None for _, per in score_rows] if scores(model) else None,
        logprobs=[total for total, _ in score_rows] if scores(model) else None,
    )


@dataclass
class Comparison:
    n: int
    answer_flips: list[str]  # the ids of items whose answers differ
    rank_flips: list[str]  # ... whose gold ranks differ (both known)
    ranks_compared: int
    max_logprob_delta: float | None  # over every log-prob both passes hold; None: none compared

    def summary(self) -> str:
        delta = "n/a" if self.max_logprob_delta is None else f"{self.max_logprob_delta:.2e}"
        text = f"identical answers {self.n - len(self.answer_flips)}/{self.n}"
        if self.ranks_compared:
            text += f", identical ranks {self.ranks_compared - len(self.rank_flips)}/{self.ranks_compared}"
        return text + f", max |log-prob delta| {delta}"

    def as_dict(self) -> dict:
        return {
            "n": self.n,
            "identical_answers": self.n - len(self.answer_flips),
            "identical_ranks": self.ranks_compared - len(self.rank_flips),
            "ranks_compared": self.ranks_compared,
            "max_logprob_delta": self.max_logprob_delta,
            "answer_flips": self.answer_flips,
            "rank_flips": self.rank_flips,
        }


def compare(a: Pass, b: Pass) -> Comparison:
    flips = [i for i, x, y in zip(a.ids, a.answers, b.answers) if x != y]
    rank_pairs = [(i, x, y) for i, x, y in zip(a.ids, a.ranks or [], b.ranks or []) if x is not None and y is not None]
    deltas = [
        abs(x - y)
        for field in ("rank_logprobs", "first_logprobs", "logprobs")
        for x, y in zip(getattr(a, field) or [], getattr(b, field) or [])
        if x is not None and y is not None
    ]
    return Comparison(
        n=len(a.ids),
        answer_flips=flips,
        rank_flips=[i for i, x, y in rank_pairs if x != y],
        ranks_compared=len(rank_pairs),
        max_logprob_delta=max(deltas) if deltas else None,
    )
