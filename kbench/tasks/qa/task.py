"""`kbench evaluate qa`: knowledge-update QA (EvolvingQA) on a dataset from `pipelines/evolving.toml`.

Per item, through the model (a `LanguageModel`, batched and cached): a greedy answer (stop at a newline, at most
`max_new_tokens`), stripped, to the question in a prompt form of `kbench.evaluate.prompts`
(`question`: an instruction + "Question: <q>\nAnswer:"; `chat`: the tokenizer's chat template),
optionally after `fewshot` solved examples drawn from the Unchanged items (never the item's subject).
Scores (`kbench.tasks.qa.metrics`, `--metric official|card`):
  * Unchanged and New items: EM / F1 against the item's answer;
  * Edited items, twice: Outdated against `answer1` (the old object; a model that learnt the
    update scores near 0 here) and Updated against `answer2` (the new object).
EM and F1 are averaged per slice, as fractions in [0, 1] (the official script prints them x100).
For edited items the runner also scores both answers as continuations of the prompt (" " + answer,
summed log-probabilities): `prefers_updated` is the share whose updated answer is more likely than
the outdated one (a tie counts for "outdated", as the official script does).

Every EM / F1 mean carries a seeded bootstrap interval and the preference share a Wilson
interval (`kbench.metrics.uncertainty`); the engine journals fixed units, so a rerun resumes.
`--limit N` evaluates a seeded sample.

Protocol `evolvingqa` (`results.json` `protocol`, docs/protocol.md): the official scorer on questions
in the standard question form, zero-shot, over every item. `--metric card`, `--prompt chat`,
`--fewshot` and a `--limit` sample each add their entry where they are applied. How an answer is
decoded is not stated: kbench's reading is an interpretation (`answer_decoding`).

Continual-update loop (README): `kbench read --text DATASET/corpus/new_snapshot.jsonl
--only change=updated --out CKPT`, then `kbench evaluate qa --model CKPT` -- Outdated should fall
and Updated rise if reading taught the model the new facts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NotRequired, TypedDict

from pydantic import Field

from kbench.dataset import has_split, open_split, seeded_sample
from kbench.errors import UserError
from kbench.evaluate import departures
from kbench.evaluate.prompts import Probe, build_probes, require_chat
from kbench.evaluate.task import TASKS, Plan, RunContext, Summary, Task, TaskSettings, Unit, chunks
from kbench.metrics import uncertainty as u
from kbench.models.interface import Capability
from kbench.protocol import REFERENCES, Deviation, Interpretation, ProtocolRecord
from kbench.records import QAItem
from kbench.tasks.qa.metrics import get_scorer


def answer_decoding(s) -> Interpretation:
    """How an answer is generated: the card and the official scorer say how to score one, not how
    long or by which decoding to produce it."""
    return Interpretation(
        "answer-decoding",
        "the official scorer's EM and F1 score a generated answer; how it is decoded and where it stops is not stated",
        f"greedy, stopped at the first newline or after {s.max_new_tokens} new tokens (--max-new-tokens), stripped",
        ("sampled answers", "a longer budget or no newline stop (longer answers lower EM and move F1)"),
        "every EM and F1 (Unchanged, New, Outdated, Updated); prefers_updated compares log-probabilities, not answers",
    )


CATEGORIES = ("unchanged", "new", "edited")
SLICES = ("unchanged", "new", "outdated", "updated")
UNIT_ITEMS = 128
HINT = "; is this an evolving QA dataset (pipelines/evolving.toml)?"
EVERY_NUMBER = "every EM and F1 (Unchanged, New, Outdated, Updated) and prefers_updated"
CARD_SCORER = Deviation(
    id="card-scorer",
    paper="the official scorer: lowercase, drop punctuation and articles, collapse whitespace; EM on the "
    "normalised strings, F1 over the multiset of shared tokens",
    kbench="--metric card: the evaluation card's recipe (EM on stripped strings, case kept; F1 over the set "
    "of shared lower-cased tokens)",
    effect="every EM and F1 (Unchanged, New, Outdated, Updated); prefers_updated is unaffected",
)


class QASettings(TaskSettings):
    split: str = "all"  # the three category splits together; or one of them
    metric: Literal["official", "card"] = Field("official", description="official: EvolvingQA's scorer; card: the card's.")
    prompt: Literal["question", "chat"] = Field("question", description="chat: the tokenizer's chat template.")
    fewshot: int = Field(default=0, ge=0, description="Solved examples from the Unchanged items before each question.")
    max_new_tokens: int = Field(default=16, ge=1, description="Tokens generated per question.")


def build_qa_probes(items: Sequence[QAItem], settings: QASettings, examples: Sequence[QAItem]) -> list[Probe]:
    """Prompts in the shared forms; a row's `object` is its current answer (answer2)."""
    as_questions = [{**r, "object": r["answer"], "subject": r.get("subject") or r["question"]} for r in items]
    pool = [{**r, "object": r["answer"], "subject": r.get("subject") or r["question"]} for r in examples]
    return build_probes(as_questions, settings.prompt, "causal", settings.fewshot, pool, settings.seed)


def read_items(dataset: Path, config: str | None, split: str) -> tuple[list[QAItem], list[dict]]:
    """(rows, the dataset blocks of the split files read)."""
    wanted = CATEGORIES if split == "all" else (split,)
    if split != "all" and split not in CATEGORIES:
        raise UserError(f"--split {split!r}: choose all or one of {', '.join(CATEGORIES)}")
    rows: list[QAItem] = []
    files: list[dict] = []
    for category in wanted:
        if not has_split(dataset, category, config):
            continue  # a snapshot pair may have no item of some category
        part = open_split(dataset, category, config, schema="qa_item.v1.json", hint=HINT)
        rows += part.rows
        files.append(part.describe())
    if not rows:
        raise UserError(f"{dataset}: no unchanged/new/edited split; build one with pipelines/evolving.toml")
    return rows, files


class QAItemRow(TypedDict):
    """One item's row (items.jsonl / items.parquet), in this key order: the item's columns, then its
    scores, which depend on its category (edited: against both snapshots; else against `answer`)."""

    id: str
    relation: str
    relation_label: str
    category: str
    question: str
    prompt: str  # as the model saw it (rendered)
    prediction: str
    answer: str
    answer1: str | None
    answer2: str
    em_outdated: NotRequired[float]
    f1_outdated: NotRequired[float]
    em_updated: NotRequired[float]
    f1_updated: NotRequired[float]
    logprob_answer1: NotRequired[float]
    logprob_answer2: NotRequired[float]
    prefers_updated: NotRequired[bool]
    em: NotRequired[float]
    f1: NotRequired[float]


def _outdated(row: QAItem) -> str:
    """An edited item's old answer (`qa_item.v1.json` allows null only for new facts)."""
    if row["answer1"] is None:
        raise UserError(f"edited item {row['id']!r} has no answer1 (the old snapshot's object)")
    return row["answer1"]


def _item_rows(model, items: list[QAItem], built: list[Probe], settings: QASettings) -> list[QAItemRow]:
    em, f1 = get_scorer(settings.metric)
    prompts = [p.prompt for p in built]
    predictions = [p.strip() for p in model.generate(prompts, settings.max_new_tokens, stop=list(built[0].stop))]
    edited = [i for i, r in enumerate(items) if r["category"] == "edited"]
    # how an answer continues its prompt: " " + answer after plain text, the bare answer after a chat turn
    lead = [built[i].gold[: len(built[i].gold) - len(items[i]["answer"])] for i in range(len(items))]
    scored = model.score_answers(
        [prompts[i] for i in edited for _ in (1, 2)],
        [lead[i] + answer for i in edited for answer in (_outdated(items[i]), items[i]["answer2"])],
    )
    likelihood = {i: (scored[2 * k][0], scored[2 * k + 1][0]) for k, i in enumerate(edited)}
    out: list[QAItemRow] = []
    for i, (row, prediction) in enumerate(zip(items, predictions)):
        item: QAItemRow = {
            "id": row["id"],
            "relation": row["relation"],
            "relation_label": row.get("relation_label", ""),
            "category": row["category"],
            "question": row["question"],
            "prompt": model.render(prompts[i]),
            "prediction": prediction,
            "answer": row["answer"],
            "answer1": row["answer1"],
            "answer2": row["answer2"],
        }
        if row["category"] == "edited":
            lp1, lp2 = likelihood[i]
            outdated = _outdated(row)
            item.update(
                {
                    "em_outdated": em(prediction, outdated),
                    "f1_outdated": f1(prediction, outdated),
                    "em_updated": em(prediction, row["answer2"]),
                    "f1_updated": f1(prediction, row["answer2"]),
                    "logprob_answer1": lp1,
                    "logprob_answer2": lp2,
                    "prefers_updated": lp2 > lp1,
                }
            )
        else:
            item.update({"em": em(prediction, row["answer"]), "f1": f1(prediction, row["answer"])})
        out.append(item)
    return out


def aggregate(items: list[dict], seed: int = u.BOOTSTRAP_SEED) -> dict:
    slices = {}
    for name in SLICES:
        if name in ("outdated", "updated"):
            rows = [r for r in items if r["category"] == "edited"]
            em_key, f1_key = f"em_{name}", f"f1_{name}"
        else:
            rows = [r for r in items if r["category"] == name]
            em_key, f1_key = "em", "f1"
        slices[name] = {  # fractions, like every kbench number (the official script prints them x100)
            "em": u.proportion_of([bool(r[em_key]) for r in rows]),  # 0/1 per item: a Wilson interval
            "f1": u.mean([r[f1_key] for r in rows], seed=seed),
        }
    edited = [r for r in items if r["category"] == "edited"]
    preference = {
        "prefers_updated": u.proportion_of([r["prefers_updated"] for r in edited]),
        "ties": sum(r["logprob_answer1"] == r["logprob_answer2"] for r in edited),
    }
    return {"splits": slices, "edited_preference": preference}


@TASKS.register()
class KnowledgeUpdateQA(Task[QASettings]):
    """Answer the questions greedily and score EM/F1 (x100) per slice; rerunning resumes where it stopped.
    --split: all (default) or one of unchanged, new, edited."""

    Settings = QASettings
    primary_metric = ("updated_em",)
    outcome_columns = ("em", "em_updated")  # edited facts count against their updated answer

    def needs(self, settings: QASettings) -> dict[str, frozenset[Capability]]:
        # answers are generated; an edited item's two answers are compared by log-likelihood
        return {"task qa": frozenset({Capability.GENERATE, Capability.LOGLIKELIHOOD})}

    def plan(self, ctx: RunContext[QASettings]) -> Plan:
        s = ctx.settings
        everything, files = read_items(ctx.dataset, s.config, s.split)
        items = seeded_sample(everything, s.limit, s.seed)
        examples = [r for r in everything if r["category"] == "unchanged"] if s.fewshot else []
        if s.prompt == "chat":
            require_chat(ctx.model.info)
        probes = build_qa_probes(items, s, examples)
        deviations = departures.present(
            departures.sample_limit(len(items), len(everything), s.limit, s.seed, EVERY_NUMBER),
            departures.prompt_form(
                s.prompt,
                ("question",),
                "asks each question in the standard question format",
                "the question as a user turn through the tokenizer's chat template",
                EVERY_NUMBER,
            ),
            departures.fewshot(
                s.fewshot,
                "the Unchanged items (never the item's subject)",
                "asks each question alone, with no solved examples",
                EVERY_NUMBER,
            ),
            CARD_SCORER if s.metric == "card" else None,
        )
        from kbench.io import stable_hash

        dataset = {
            "path": str(ctx.dataset),
            "split": s.split,
            "files": files,
            "sha256": stable_hash([f["sha256"] for f in files]),
        }
        state = ProtocolRecord("evolvingqa", REFERENCES["evolvingqa"], deviations, (answer_decoding(s),))
        return Plan(units=chunks(list(zip(items, probes)), UNIT_ITEMS), dataset=dataset, state=state)

    def score(self, ctx: RunContext[QASettings], state: ProtocolRecord, unit: Unit) -> list[QAItemRow]:
        pairs: list[tuple[QAItem, Probe]] = unit.items  # (item, its prompt), planned together
        return _item_rows(ctx.model, [r for r, _ in pairs], [p for _, p in pairs], ctx.settings)

    def aggregate(self, ctx: RunContext[QASettings], state: ProtocolRecord, rows: list[dict]) -> Summary:
        summary = aggregate(rows, seed=ctx.settings.seed)
        splits = summary["splits"]
        headline = {
            f"{name}_em": splits[name]["em"] for name in ("unchanged", "new", "updated", "outdated") if splits[name]["em"]["n"]
        }
        if summary["edited_preference"]["prefers_updated"]["n"]:
            headline["prefers_updated"] = summary["edited_preference"]["prefers_updated"]
        return Summary(headline=headline, metrics={"metric": ctx.settings.metric, **summary}, protocol=state)
