"""`kbench evaluate truefalse`: LEFT's true/false statements, in three settings.

Input: a dataset folder from `pipelines/left-textbook.toml` (statement rows, schema
`statement.v1.json`; the book text in `corpus/paragraphs.jsonl`).

How a statement is judged. The model reads

    [Passage: <paragraph>\n]Statement: <statement>\nIs this statement true or false?\nAnswer:

and the model scores the answer forms " True" and " False" (summed log-probabilities);
margin = logP(True) - logP(False). The headline `accuracy` is LEFT's: per statement, a
statement is called true when its margin is > 0. LEFT's statements come in balanced pairs (one
true, one false per question), so a second, clearly named number is the within-pair forced
choice, `pair_choice_accuracy`: the statement with the higher margin is called true and the
other false (a tie calls both false), which removes the model's bias towards one answer word.

Settings:
  * `prior`: the statement alone, the model as given;
  * `open-book`: with one paragraph in the prompt (cut to `max_passage_words`): `--retriever gold`
    (the section paragraph sharing most words with the question and its correct option, see
    `retrieval.py`) or `sbert` (MiniLM top-1 over the statement's chapter, queried with the
    statement itself);
  * `closed-book`: the prior prompt on the model after `kbench read` (`--checkpoint`); the base
    model is scored too, and results hold the before -> after accuracy, its delta and LEFT's
    closed book - prior as a paired difference on the statements (Newcombe's paired interval)
    beside the exact McNemar test. Open book - prior compares two runs (`kbench report` on a
    prior and an open-book run of one model: `kbench.tasks.truefalse.report`).

The paper's classifier is a model fine-tuned on BoolQ, not a zero-shot margin: `--boolq-checkpoint
DIR` (prior, open book) judges such a fine-tune (`kbench.models.training.boolq`) instead of
--model. The protocol block (`left-prior`, `left-open-book`, `left-closed-book`) records the
zero-shot judge and every other departure (`kbench.tasks.truefalse.protocol`).

`--limit N` takes the first N statements in dataset order, rounded up to whole pairs (quick runs
then touch few chapters, so sbert embeds few paragraphs). Units of whole pairs are journalled by
the engine, so a rerun resumes; accuracies carry Wilson intervals.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from kbench.dataset import open_split
from kbench.errors import UserError
from kbench.evaluate.task import TASKS, Plan, RunContext, Summary, Task, TaskSettings, Unit, chunks
from kbench.io import iter_jsonl
from kbench.metrics import uncertainty as u
from kbench.metrics.pairs import pair_choice
from kbench.models.interface import Capability
from kbench.paths import default_cache_dir
from kbench.records import Statement
from kbench.tasks.truefalse.prompt import truefalse_prompt as prompt_text
from kbench.tasks.truefalse.protocol import check_boolq_folder, judge_description, left_protocol

ANSWERS = (" True", " False")
UNIT_PAIRS = 32
CORPUS_FILE = "corpus/paragraphs.jsonl"
HINT = "; is this a LEFT dataset (pipelines/left-textbook.toml)?"


class TrueFalseSettings(TaskSettings):
    split: str = "dev"
    setting: Literal["prior", "closed-book", "open-book"] = Field("prior", description="What the model reads first.")
    retriever: Literal["gold", "sbert"] | None = Field(
        None, description="open-book: gold (the section's paragraph) or sbert (MiniLM top-1)."
    )
    max_passage_words: int = Field(default=150, ge=1, description="open-book: cut the paragraph to this many words.")
    checkpoint: str | None = Field(
        None, description="closed-book: the folder written by `kbench read` (--model is then the model before reading)."
    )
    boolq_checkpoint: str | None = Field(
        None,
        description="prior / open-book: a causal LM folder fine-tuned on BoolQ to answer True/False "
        "(kbench.models.training.boolq), judged instead of --model: the paper's prior.",
    )

    @model_validator(mode="after")
    def _consistent(self):
        if self.setting == "open-book" and self.retriever is None:
            raise ValueError("--setting open-book needs --retriever gold or sbert")
        if self.setting != "open-book" and self.retriever is not None:
            raise ValueError("--retriever applies to --setting open-book only")
        if (self.setting == "closed-book") != (self.checkpoint is not None):
            raise ValueError("--checkpoint (a folder written by `kbench read`) goes with --setting closed-book, and only with it")
        if self.checkpoint is not None and not Path(self.checkpoint).is_dir():
            raise ValueError(f"--checkpoint {self.checkpoint}: not a folder (write one with `kbench read`)")
        if self.boolq_checkpoint is not None:
            if self.setting == "closed-book":
                raise ValueError("--boolq-checkpoint applies to --setting prior and open-book (closed book judges --checkpoint)")
            check_boolq_folder(Path(self.boolq_checkpoint))
        return self


def first_pairs(rows: Sequence[Statement], limit: int | None) -> list[list[Statement]]:
    """Rows grouped by pair in dataset order; the first pairs that hold `limit` statements."""
    pairs: dict[str, list[Statement]] = {}
    for row in rows:
        pairs.setdefault(row["pair_id"], []).append(row)
    for pair_id, pair in pairs.items():
        if sorted(r["label"] for r in pair) != [False, True]:
            raise UserError(f"pair {pair_id!r} does not hold exactly one true and one false statement")
    out, count = [], 0
    for pair in pairs.values():
        if limit is not None and count >= limit:
            break
        out.append(pair)
        count += len(pair)
    return out


def read_corpus(dataset: Path) -> list[dict]:
    path = dataset / CORPUS_FILE
    if not path.is_file():
        raise UserError(f"{dataset}: no {CORPUS_FILE}; the sbert retriever needs the book text written by load_textbook")
    return [row for _, row in iter_jsonl(path, ("para_id", "book", "chapter", "text"))]


class Contexts:
    """The passage for each statement under the chosen setting/retriever: (paragraph id, text)."""

    def __init__(self, settings: TrueFalseSettings, dataset: Path, cache_dir: Path):
        self.settings = settings
        self.dataset = dataset
        self.cache_dir = cache_dir
        self._indexes: dict[tuple, object] = {}
        self._corpus: dict[tuple, list[dict]] | None = None

    def for_rows(self, rows: list[dict]) -> list[tuple[str | None, str | None]]:
        from kbench.evaluate.retrieval import gold_paragraph

        if self.settings.setting != "open-book":
            return [(None, None)] * len(rows)
        if self.settings.retriever == "gold":
            return [gold_paragraph(r["paragraphs"], r["paragraph_ids"], f"{r['question']} {r['correct_option']}") for r in rows]
        by_chapter: dict[tuple, list[int]] = defaultdict(list)
        for i, row in enumerate(rows):
            by_chapter[(row["book"], row["chapter"])].append(i)
        out: list[tuple[str | None, str | None]] = [(None, None)] * len(rows)
        for (book, chapter), positions in by_chapter.items():  # one embedding call per chapter
            found = self._index(book, chapter).top([rows[i]["statement"] for i in positions])
            for i, (pid, text, _) in zip(positions, found):
                out[i] = (pid, text)
        return out

    def _index(self, book: str, chapter: int):
        from kbench.evaluate.retrieval import EmbeddingIndex, shared_embedder

        key = (book, chapter)
        if key not in self._indexes:
            if self._corpus is None:
                self._corpus = defaultdict(list)
                for para in read_corpus(self.dataset):
                    self._corpus[(para["book"], para["chapter"])].append(para)
            pool = self._corpus.get(key, [])
            if not pool:
                raise UserError(f"{self.dataset / CORPUS_FILE}: no paragraphs for {book!r} chapter {chapter}")
            self._indexes[key] = EmbeddingIndex(
                shared_embedder(), [p["para_id"] for p in pool], [p["text"] for p in pool], self.cache_dir
            )
        return self._indexes[key]


def judge_pairs(model, pairs: list[list[dict]], contexts: list[list[tuple]], max_words: int, prefix: str = "") -> list[dict]:
    """Score every statement of `pairs`; return per-statement rows with calibrated predictions."""
    flat = [(row, ctx) for pair, ctxs in zip(pairs, contexts) for row, ctx in zip(pair, ctxs)]
    prompts = [prompt_text(row["statement"], ctx[1], max_words) for row, ctx in flat]
    scores = model.score_answers([p for p in prompts for _ in ANSWERS], [a for _ in prompts for a in ANSWERS])
    out, k = [], 0
    for pair in pairs:
        margins = []
        for _ in pair:
            margins.append(scores[2 * k][0] - scores[2 * k + 1][0])
            k += 1
        winners = pair_choice(margins)
        start = k - len(pair)
        for j, row in enumerate(pair):
            i = start + j
            out.append(
                {
                    f"{prefix}logprob_true": scores[2 * i][0],
                    f"{prefix}logprob_false": scores[2 * i + 1][0],
                    f"{prefix}margin": margins[j],
                    f"{prefix}predicted": margins[j] > 0,
                    f"{prefix}correct": (margins[j] > 0) == row["label"],
                    f"{prefix}pair_choice": winners[j],
                    f"{prefix}correct_pair_choice": winners[j] == row["label"],
                }
            )
    return [{"prompt": p, "context_id": ctx[0], **scored} for p, (_, ctx), scored in zip(prompts, flat, out)]


def _summary(rows: list[dict], prefix: str = "") -> dict:
    pairs: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        pairs[r["pair_id"]].append(r[f"{prefix}correct_pair_choice"])
    return {
        "accuracy": u.proportion_of([r[f"{prefix}correct"] for r in rows]),
        # one outcome per pair (its two statements are called together; a tie gets the pair wrong):
        # counting statements would double n and narrow the interval by about sqrt(2)
        "pair_choice_accuracy": u.proportion_of([all(calls) for calls in pairs.values()]),
    }


def aggregate(items: list[dict], closed_book: bool) -> dict:
    per_book: dict[str, list[dict]] = defaultdict(list)
    for r in items:
        per_book[r["book"]].append(r)
    out = {"overall": _summary(items), "per_book": {b: _summary(rs) for b, rs in sorted(per_book.items())}}
    if closed_book:
        before = _summary(items, "before_")["accuracy"]
        after = out["overall"]["accuracy"]
        # the same statements before and after reading: a paired comparison
        after_by_id, before_by_id = ({r["id"]: r[f"{p}correct"] for r in items} for p in ("", "before_"))
        out["before_after"] = {
            "before_accuracy": before,
            "after_accuracy": after,
            "delta": None if after["value"] is None else after["value"] - before["value"],
            "difference": u.difference_paired(after_by_id, before_by_id),  # closed book - prior, same statements
            "paired_test": u.mcnemar(after_by_id, before_by_id),
        }
    return out


def headline_name(settings: TrueFalseSettings) -> str:
    """The setting a cross-model report (`kbench report standardize`) files this accuracy under."""
    return settings.setting + (f"-{settings.retriever}" if settings.retriever else "")


@TASKS.register()
class TrueFalse(Task[TrueFalseSettings]):
    """Judge statements true or false (--split dev: chapters 1-8, or test; --limit: the first N statements,
    whole pairs); closed book judges --checkpoint, --model is the model before reading; rerunning the same
    command resumes where it stopped."""

    Settings = TrueFalseSettings
    primary_metric = ("accuracy",)

    def needs(self, settings: TrueFalseSettings) -> dict[str, frozenset[Capability]]:
        return {"task truefalse": frozenset({Capability.LOGLIKELIHOOD})}  # the answer forms' summed log-probs

    def roles(self, settings: TrueFalseSettings, model, models: dict) -> tuple:
        if settings.boolq_checkpoint is not None:
            return settings.boolq_checkpoint, models  # the paper's prior: the BoolQ fine-tune is judged
        if settings.checkpoint is None:
            return model, models
        # closed book: the checkpoint is judged, the caller's model is the model before reading
        return settings.checkpoint, {"base": model, **models}

    def report_files(self, runs: list, items: list[list[dict]], out_dir: Path) -> None:
        """`left_settings.md`: each setting against its prior, paired on statements (`report.py`)."""
        from kbench.io import write_text
        from kbench.tasks.truefalse.report import markdown, setting_comparisons

        settings = setting_comparisons(runs, items)
        if settings:
            write_text(out_dir / "left_settings.md", markdown(settings))

    def standard_name(self, run) -> str:
        """Settings and splits are different tasks: `truefalse:prior:dev`, `truefalse:open-bm25:test`."""
        settings = run.results.get("settings") or {}
        if not settings.get("setting"):
            return self.name
        retriever = f"-{settings['retriever']}" if settings.get("retriever") else ""
        return f"{self.name}:{settings['setting']}{retriever}:{settings.get('split', '')}".rstrip(":")

    def plan(self, ctx: RunContext[TrueFalseSettings]) -> Plan:
        s = ctx.settings
        split = open_split(ctx.dataset, s.split, s.config, schema="statement.v1.json", hint=HINT)
        pairs = first_pairs(split.rows, s.limit)
        depends = {"base_model": ctx.models["base"].info.identity} if "base" in ctx.models else {}
        # the state: the passage finder (it fills its embedding indexes as chapters come up)
        contexts = Contexts(s, ctx.dataset, default_cache_dir())
        return Plan(units=chunks(pairs, UNIT_PAIRS), dataset=split.describe(), depends_on=depends, state=contexts)

    def score(self, ctx: RunContext[TrueFalseSettings], state: Contexts, unit: Unit) -> list[dict]:
        s = ctx.settings
        chunk = unit.items
        flat = [r for pair in chunk for r in pair]
        found = state.for_rows(flat)
        grouped, k = [], 0
        for pair in chunk:
            grouped.append(found[k : k + len(pair)])
            k += len(pair)
        judged = judge_pairs(ctx.model, chunk, grouped, s.max_passage_words)
        before = (
            judge_pairs(ctx.models["base"], chunk, grouped, s.max_passage_words, "before_")
            if s.setting == "closed-book"
            else None
        )
        rows = []
        for i, row in enumerate(flat):
            item = {key: row[key] for key in ("id", "pair_id", "book", "chapter", "section", "split", "statement", "label")}
            item.update(judged[i])
            if before is not None:
                item.update({key: v for key, v in before[i].items() if key.startswith("before_")})
            rows.append(item)
        return rows

    def aggregate(self, ctx: RunContext[TrueFalseSettings], state: Contexts, rows: list[dict]) -> Summary:
        s = ctx.settings
        summary = aggregate(rows, s.setting == "closed-book")
        metrics = {
            "setting": headline_name(s),
            "answers": list(ANSWERS),
            "prompt_template": prompt_text("{statement}", "{passage}" if s.setting == "open-book" else None, 10**6),
            "base_model": ctx.models["base"].describe() if "base" in ctx.models else None,
            "judge": judge_description(s),
            **summary,
        }
        headline = {
            "accuracy": summary["overall"]["accuracy"],
            "pair_choice_accuracy": summary["overall"]["pair_choice_accuracy"],
        }
        if "before_after" in summary:
            headline["before_accuracy"] = summary["before_after"]["before_accuracy"]
            headline["closed-book - prior"] = summary["before_after"]["difference"]
        return Summary(headline=headline, metrics=metrics, protocol=left_protocol(s, len(rows)))
