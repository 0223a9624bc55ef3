"""The technique contract shared by every knowledge-elicitation (KEE) technique.

A technique answers benchmark items with the model and reports, for each item, its final
answer and the full-vocabulary rank of the gold answer's first token under its own
intervention (the input of PRS). Contract of `Technique.run(context, items)`:

- input: `KeeContext` (the model, a `CachedModel`: the model interface behind the result cache;
  the fitting pool; the run folder for fitted artefacts) and the items to answer, in order;
- output: one `TechniqueOutput` per item, in the same order;
- every model call is a method of the model interface (white-box techniques: `layout`,
  `activations`, `strongest_attention` and `Intervention` data), so results are cached per item
  and a rerun recomputes nothing; anything fitted (steering vectors, probes, head lists) is
  saved as safetensors/JSON in `context.fit_dir` and reloaded on resume;
- `needs`: the capabilities the technique needs (`Capability`); the KEE task refuses a model
  that lacks one before any work. The gold's rank (PRS) is read only where the model ranks
  exactly over the full vocabulary (`Capability.RANK_EXACT`); elsewhere it is None, never
  approximated;
- greedy decoding everywhere except where the technique is defined by sampling.

Prompts are worded in one place, `KeeContext` (chat template for instruct models, else plain
text ending in "Answer:"), so the gold's first token is read at the very position where free
generation starts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from kbench.evaluate.prompts import answer_body, question_turn, require_chat
from kbench.metrics.matching import normalize_for_matching
from kbench.models.cached import CachedModel
from kbench.models.interface import Capability, Intervention, LanguageModel, ModelInfo
from kbench.models.prompt import Prompt
from kbench.protocol import Deviation

MAX_ANSWER_TOKENS = 16
ANSWER_STOP = ["\n"]


@dataclass(frozen=True)
class KeeItem:
    id: str
    question: str
    answers: tuple[str, ...]  # gold label first, then aliases
    relation: str = ""
    frequency_bin: str | None = None

    @property
    def gold(self) -> str:
        return self.answers[0]


@dataclass
class TechniqueOutput:
    answer: str
    gold_rank: int | None  # 1 = the gold's first token is the top next token; None: the model has no exact ranks
    gold_logprob: float | None
    detail: dict[str, Any] = field(default_factory=dict)  # samples, votes, passages ... (JSON)
    #: a sampling technique's seed-B samples, in draw order: SGR / DGR read the first K under each
    #: reading of "recovered" (`metrics.READINGS`; None: recovered means the final answer is correct)
    recovery_samples: list[str] | None = None


@dataclass
class KeeContext:
    """What a technique runs with, and the one place prompts are worded.

    `chat`: every instruction is a user turn, which the model renders (instruct models; the answer
    then starts the reply and the gold continues it bare). Otherwise plain text ending in a cue
    ("Answer:") and the gold continues it as " " + gold."""

    model: CachedModel  # the model interface behind the result cache (a bare LanguageModel is wrapped, no store)
    fit_dir: Path  # where fitted artefacts of this run live
    train_items: Sequence[KeeItem] = ()  # the dataset's train split, when it has one
    evaluated_items: Sequence[KeeItem] = ()  # every item of the run (fold fitting without a train split)
    seed: int = 0
    chat: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.model, CachedModel):
            self.model = CachedModel(self.model, None)

    def task_prompt(self, instruction: str, question: str, cue: str) -> Prompt:
        """A stage prompt (recite a passage, write a background document) for `question`."""
        return question_turn(f"{instruction}\nQuestion: {question}", cue, self.chat)

    def answer_prompt(self, question: str, passage: str | None = None) -> Prompt:
        """The final answer prompt (worded in `kbench.evaluate.prompts`)."""
        return question_turn(answer_body(question, passage), "Answer", self.chat)

    @property
    def ranks_exactly(self) -> bool:
        return Capability.RANK_EXACT in self.model.info.capabilities

    def answers_and_ranks(
        self, prompts: Sequence[Prompt], golds: Sequence[str], intervention: Intervention | None = None
    ) -> Sequence[tuple[str, int | None, float | None]]:
        """(greedy answer, gold rank, gold logprob) per prompt: one prefill serves both
        (`generate_and_rank`); rank and logprob None where the model has no exact ranks."""
        if self.ranks_exactly:
            return self.model.generate_and_rank(prompts, golds, MAX_ANSWER_TOKENS, ANSWER_STOP, intervention=intervention)
        texts = self.model.generate(prompts, MAX_ANSWER_TOKENS, ANSWER_STOP, intervention=intervention)
        return [(text, None, None) for text in texts]

    def ranks(self, prompts: Sequence[Prompt], golds: Sequence[str]) -> Sequence[tuple[int | None, float | None]]:
        """(gold rank, gold logprob) per prompt; None where the model has no exact ranks."""
        if self.ranks_exactly:
            return self.model.rank_first_token(prompts, golds)
        return [(None, None) for _ in prompts]

    def gold(self, item: KeeItem) -> str:
        """The gold label as the continuation of an answer prompt (its first token is ranked)."""
        return item.gold if self.chat else " " + item.gold


def use_chat(info: ModelInfo, prompt: str) -> bool:
    """--prompt auto|chat|question -> whether prompts are chat turns."""
    from kbench.errors import UserError

    if prompt == "chat":
        require_chat(info)
    if prompt not in ("auto", "chat", "question"):
        raise UserError(f"unknown --prompt {prompt!r}; choose auto, chat or question")
    return prompt == "chat" or (prompt == "auto" and info.chat)


def clean_answer(text: str) -> str:
    return text.strip()


def majority_vote(answers: Sequence[str]) -> str:
    """The most frequent answer, answers compared after MAPLE normalisation (so "Paris" and
    "paris." vote together); ties go to the answer seen first, so the vote is deterministic."""
    return answers[winning_index(answers)] if answers else ""


def winning_index(answers: Sequence[str]) -> int:
    """Index of the first answer of the majority group (see `majority_vote`); -1 when empty."""
    if not answers:
        return -1
    keys = [normalize_for_matching(a) for a in answers]
    counts = Counter(keys)
    best = max(counts.values())
    return next(n for n, k in enumerate(keys) if counts[k] == best)


class TechniqueParams(BaseModel):
    """A technique's settings, validated (unknown keys and out-of-range values are errors); every
    field, defaults included, is written to results.json."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Technique:
    """Base class: subclasses set `family`, a `Params` model, and implement `run`. `params()`
    lists every setting that changes the outputs (written to results.json, part of cache keys).

    Output details: a technique whose answers depend on something chosen at run time (a layer,
    a head list, a fitting pool) puts it under `detail["fit"]` of each item; the run's results
    list each distinct fit record under the technique's entry."""

    name: str = ""  # the registered name, set on each instance by `get_technique`
    family: ClassVar[str] = ""
    Params: ClassVar[type[TechniqueParams]] = TechniqueParams
    #: what the technique needs of the model; its gold ranks (PRS) need RANK_EXACT besides, where offered
    needs: ClassVar[frozenset[Capability]] = frozenset({Capability.GENERATE})

    def __init__(self, **values: Any):
        self.p = self.Params(**values)  # pydantic.ValidationError on a bad value; get_technique names it

    def params(self) -> dict[str, Any]:
        return self.p.model_dump()

    def check(self, model: LanguageModel) -> None:
        """Raise a UserError when the settings cannot run on `model` (called before any stage,
        once `needs` is met)."""

    def deviations(self, fitted: Sequence[dict]) -> list[Deviation]:
        """Where this technique, as configured and as fitted (its `detail["fit"]` records), departs
        from MAPLE's configuration (Appendix B), one `Deviation` each with a stable id that names
        the technique; empty when it follows it. The KEE task collects them into the
        run's protocol block."""
        return []

    def run(self, context: KeeContext, items: Sequence[KeeItem]) -> list[TechniqueOutput]:
        raise NotImplementedError


def greedy_answers(
    context: KeeContext,
    prompts: Sequence[Prompt],
    items: Sequence[KeeItem],
    intervention=None,
    detail: Sequence[dict] | None = None,
) -> list[TechniqueOutput]:
    """Greedy answers plus the gold first-token rank on the same prompts, under one intervention
    (`KeeContext.answers_and_ranks`)."""
    results = context.answers_and_ranks(prompts, [context.gold(i) for i in items], intervention)
    extra = detail or [{} for _ in items]
    return [TechniqueOutput(clean_answer(t), r, lp, d) for (t, r, lp), d in zip(results, extra)]
