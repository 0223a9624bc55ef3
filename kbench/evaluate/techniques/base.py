"""The technique contract shared by every knowledge-elicitation (KEE) technique.

A technique answers benchmark items with the model and reports, for each item, its final
answer and the full-vocabulary rank of the gold answer's first token under its own
intervention (the input of PRS). Contract of `Technique.run(context, items)`:

- input: `KeeContext` (the batched `ModelRunner`, the fitting pool, the run folder for fitted
  artefacts) and the items to answer, in order;
- output: one `TechniqueOutput` per item, in the same order;
- all model calls go through the runner, so results are cached per item and a rerun recomputes
  nothing; anything fitted (steering vectors, probes, head lists) is saved as safetensors/JSON
  in `context.fit_dir` and reloaded on resume;
- greedy decoding everywhere except where the technique is defined by sampling.

Prompts are plain text ending in "Answer:" so the gold's first token is read at the same
position where free generation starts; the gold continuation is " " + gold label.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kbench.evaluate.prompts import INSTRUCTION
from kbench.metrics.matching import normalize_for_matching

ANSWER_INSTRUCTION = INSTRUCTION   # one prompt wording for every task (kbench.evaluate.prompts)
MAX_ANSWER_TOKENS = 16
ANSWER_STOP = ["\n"]


@dataclass(frozen=True)
class KeeItem:
    id: str
    question: str
    answers: tuple[str, ...]       # gold label first, then aliases
    relation: str = ""
    frequency_bin: str | None = None

    @property
    def gold(self) -> str:
        return self.answers[0]


@dataclass
class TechniqueOutput:
    answer: str
    gold_rank: int                 # 1 = the gold's first token is the top next token
    gold_logprob: float
    detail: dict[str, Any] = field(default_factory=dict)   # samples, votes, passages ... (JSON)


@dataclass
class KeeContext:
    runner: Any                    # kbench.models.runner.ModelRunner
    fit_dir: Path                  # where fitted artefacts of this run live
    train_items: Sequence[KeeItem] = ()   # the dataset's train split, when it has one
    seed: int = 0


def answer_prompt(question: str, passage: str | None = None) -> str:
    """The final answer prompt; a passage (recitation, background document) goes first."""
    head = f"Passage: {passage.strip()}\n" if passage else ""
    return f"{head}{ANSWER_INSTRUCTION}\nQuestion: {question}\nAnswer:"


def gold_continuation(item: KeeItem) -> str:
    return " " + item.gold


def clean_answer(text: str) -> str:
    return text.strip()


def majority_vote(answers: Sequence[str]) -> str:
    """The most frequent answer, answers compared after MAPLE normalisation (so "Paris" and
    "paris." vote together); ties go to the answer seen first, so the vote is deterministic."""
    if not answers:
        return ""
    keys = [normalize_for_matching(a) for a in answers]
    counts = Counter(keys)
    best = max(counts.values())
    winner = next(k for k in keys if counts[k] == best)
    return answers[keys.index(winner)]


class Technique:
    """Base class: subclasses set `family` and implement `run`; `params()` lists every setting
    that changes the outputs (it is written to results.json and keys the row files)."""

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""

    def params(self) -> dict[str, Any]:
        return {}

    def run(self, context: KeeContext, items: Sequence[KeeItem]) -> list[TechniqueOutput]:
        raise NotImplementedError


def greedy_answers(context: KeeContext, prompts: Sequence[str], items: Sequence[KeeItem],
                   intervention=None, detail: Sequence[dict] | None = None) -> list[TechniqueOutput]:
    """Greedy answers plus the gold first-token rank on the same prompts, under one intervention."""
    runner = context.runner
    texts = runner.generate(prompts, max_new_tokens=MAX_ANSWER_TOKENS, stop=ANSWER_STOP, intervention=intervention)
    ranks = runner.rank_first_token(prompts, [gold_continuation(i) for i in items], intervention=intervention)
    extra = detail or [{} for _ in items]
    return [TechniqueOutput(clean_answer(t), r, lp, d) for t, (r, lp), d in zip(texts, ranks, extra)]
