"""`kbench evaluate extraction`: which facts of a dataset split does a model know?

Input: a dataset folder written by `write_dataset` (Question rows, `schemas/question.v1.json`).
Per item, through the model (`kbench.models.interface.LanguageModel`):

* protocol `maple` (default, causal LMs): a greedy answer (stopping at `stop`, at most
  `max_new_tokens`), judged by MAPLE matching (`correct`) and strict exact match (`exact`)
  against the gold + aliases; plus the gold's first-token rank and log-probability. The share of
  items whose gold first token ranks first is `first_token_p1` (micro) and
  `first_token_p1_macro` (mean over relations): a first-token hit rate on multi-token answers,
  NOT LAMA P@1.
* protocol `lama` (Petroni et al., the strict protocol): only items whose object is one token of
  the model's vocabulary (and, with `common_vocab`, listed in that file; ranks are then taken
  over those words only); `correct` = `exact` = the gold token ranked first (item rows), so the
  numbers are `first_token_p1` and `lama_p_at_1`, the macro mean over relations of distinct facts,
  which exists only under this protocol (no `maple_accuracy` / `exact_accuracy`: nothing is generated).

Ranks come from the backend (`kbench.models.interface.Capability`): with RANK_EXACT every rank
metric is computed; with only RANK_TOP_K (a server's `top_logprobs`) a rank is known within the
top k, so the P@1 figures stay exact (rank 1 is always within it) while `mean_gold_logprob` is
undefined; with neither (a generation-only server) the MAPLE protocol still generates and judges
answers, and every rank metric is an undefined Estimate with the reason (`metrics.ranks`).
Nothing is approximated.

Protocol (`results.json` `protocol`, docs/protocol.md): `maple-extraction` (MAPLE's short-answer
questions, greedy, matched with aliases) or `lama-strict-p@1` (Petroni et al.'s cloze templates over
their common vocabulary). Each setting that departs from the paper adds its entry where it is applied:
a `--limit` sample, `--fewshot`, a prompt form the paper does not use, a plain question prompt on a
causal LM (MAPLE's instruct models answer through their chat template; KEE records the same), a
LAMA run over the full vocabulary or over another word list than LAMA's. Where MAPLE is silent
the block lists kbench's reading as an interpretation (`maple_interpretations`): the case of its
matching (`--case-sensitive` takes the other reading) and the wording of the question.

Metrics are reported overall, per relation, per source (T-REx, Google-RE, ...), per frequency
bin; every number is an Estimate with its n and 95% interval (`kbench.metrics.uncertainty`).
The bins are compared head - tail and head - torso (`frequency_bin_differences`; KoLA's design
expectation that head entities are known better, which MAPLE does not report): unpaired differences of
each proportion, Newcombe intervals. The report says next to them when the dataset's bins stand in for
MAPLE's pageview bins (its construction protocol).
Extra output: `known_facts.parquet`, the known-fact set D^theta (the dataset rows the model
answered correctly, with its prediction and rank), which XTEVAL reads with `--known-facts`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

from pydantic import Field

from kbench.dataset import open_split, seeded_sample
from kbench.errors import UserError
from kbench.evaluate import departures
from kbench.evaluate.prompts import Probe, build_probes, require_chat
from kbench.evaluate.task import TASKS, Plan, RunContext, Summary, Task, TaskSettings, Unit, chunks
from kbench.io import write_parquet
from kbench.metrics import uncertainty as u
from kbench.metrics.matching import distinct_fact_hits, exact_match, maple_correct
from kbench.models.interface import Capability
from kbench.protocol import Deviation, Interpretation, ProtocolRecord
from kbench.records import Question
from kbench.tasks.extraction.protocol import (
    EVERY_NUMBER,
    PROTOCOLS,
    maple_interpretations,
    prompt_deviation,
    vocabulary_deviation,
)

UNIT_ITEMS = 256  # items per work unit; the model batches inside a unit
#: why a rank metric is undefined, by what the backend knows of ranks
UNDEFINED = {
    "none": "the backend gives no first-token ranks (generation only)",
    "top_k": "the backend ranks only within the server's top k: the gold's log-prob beyond it is unknown",
}


class ExtractionSettings(TaskSettings):
    prompt: Literal["cloze", "question", "chat"] = Field(default="cloze", description="Prompt form.")
    fewshot: int = Field(default=0, ge=0, description="Solved examples from the train split before each item.")
    protocol: Literal["maple", "lama"] = Field(
        default="maple", description="maple: generate + match, first_token_p1 beside it; lama: strict single-token LAMA P@1."
    )
    common_vocab: str | None = Field(
        default=None, description="lama protocol: restrict objects and ranks to this word list (a file)."
    )
    case_sensitive: bool = Field(default=False, description="MAPLE matching keeps case.")
    max_new_tokens: int = Field(default=16, ge=1, description="Tokens generated per item.")
    stop: tuple[str, ...] | None = Field(
        default=None, description="A stop string; default: the prompt form's (cloze: newline, '. ', ','; question/chat: newline)."
    )


def _single_tokens(model, texts: list[str]) -> list[int | None]:
    """Each text's token id where it is one token, else None."""
    return [ids[0] if len(ids) == 1 else None for ids in model.token_ids(texts)]


def lama_filter(rows: list[Question], probes: list[Probe], model, common_vocab: str | None):
    """Keep items whose gold is a single token (and in the common vocabulary); return the kept
    (rows, probes), the drop counts, the candidate token ids (None = full vocabulary) and the
    deviation of the candidate set from LAMA's common vocabulary (None when it is LAMA's)."""
    vocab = None
    if common_vocab:
        path = Path(common_vocab)
        if not path.is_file():
            raise UserError(f"--common-vocab: file not found: {path}")
        vocab = {w.strip() for w in path.read_text(encoding="utf-8").splitlines() if w.strip()}
    kept_rows, kept_probes = [], []
    drops = {"multi_token_object": 0, "not_in_common_vocab": 0}
    gold_tokens = _single_tokens(model, [p.gold for p in probes])
    for row, probe, gold_token in zip(rows, probes, gold_tokens):
        if vocab is not None and row["object"] not in vocab:
            drops["not_in_common_vocab"] += 1
        elif gold_token is None:
            drops["multi_token_object"] += 1
        else:
            kept_rows.append(row)
            kept_probes.append(probe)
    candidates = None
    if vocab is not None and probes:
        # a word is a candidate in the form the gold takes at this position (leading space / Ġ marker)
        lead = probes[0].gold[: len(probes[0].gold) - len(rows[0]["object"])]
        words = sorted(vocab)
        candidates = sorted({t for t in _single_tokens(model, [lead + w for w in words]) if t is not None})
    return kept_rows, kept_probes, drops, candidates, vocabulary_deviation(common_vocab, vocab, drops)


def rank_knowledge(model) -> str:
    """What the model's backend knows of first-token ranks: "exact", "top_k" or "none"."""
    if Capability.RANK_EXACT in model.info.capabilities:
        return "exact"
    return "top_k" if Capability.RANK_TOP_K in model.info.capabilities else "none"


class ExtractionItemRow(TypedDict):
    """One item's row (items.jsonl / items.parquet), in this key order."""

    id: str
    relation: str
    relation_label: str
    source: str | None
    subject: str
    object: str
    answers: list[str]
    frequency_bin: str | None
    prompt: str  # as the model saw it (rendered)
    prediction: str | None  # None: the lama protocol ranks, it does not generate
    correct: bool
    exact: bool
    gold_rank: int | None  # None: unknown (beyond top k, or no ranks)
    gold_logprob: float | None


@dataclass(frozen=True)
class ExtractionPlan:
    rows: list[Question]  # the dataset rows evaluated, in plan order
    drops: dict[str, int]  # what the LAMA protocol's filter dropped, by reason
    candidates: list[int] | None  # the common vocabulary's token ids (None: the full vocabulary)
    stop: list[str]
    ranks: str  # rank_knowledge(model)
    deviations: tuple[Deviation, ...] = ()  # where this run departs from its protocol's paper
    interpretations: tuple[Interpretation, ...] = ()  # kbench's readings where the paper is silent


def _estimates(rows: Sequence[dict], protocol: str, ranks: str) -> dict:
    """Every number of one slice of items, each an Estimate, named for the protocol it follows;
    a rank metric the backend cannot give is undefined, with the reason."""
    p1_undefined = u.undefined(UNDEFINED["none"]) if ranks == "none" else None
    out = {
        "first_token_p1": p1_undefined or u.proportion_of([r["gold_rank"] == 1 for r in rows]),
        "mean_gold_logprob": u.mean([r["gold_logprob"] for r in rows]) if ranks == "exact" else u.undefined(UNDEFINED[ranks]),
    }
    if protocol == "lama":
        # nothing is generated: a row's `correct` is its rank-1 hit, which first_token_p1 already counts
        out["lama_p_at_1"] = p1_undefined or u.macro_mean(_distinct_facts(rows))
        return out
    return {
        "maple_accuracy": u.proportion_of([r["correct"] for r in rows]),
        "exact_accuracy": u.proportion_of([r["exact"] for r in rows]),
        **out,
        "first_token_p1_macro": p1_undefined or u.macro_mean(_distinct_facts(rows)),
    }


def _distinct_facts(rows: Sequence[dict]) -> dict[str, list[float]]:
    return distinct_fact_hits((r["relation"], r["subject"], r["object"], r["gold_rank"] == 1) for r in rows)


def _grouped(rows: Sequence[dict], key) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    return dict(sorted(groups.items()))


@TASKS.register()
class Extraction(Task[ExtractionSettings]):
    """Probe a model on a dataset split; rerunning the same command resumes where it stopped."""

    Settings = ExtractionSettings
    primary_metric = ("maple_accuracy", "lama_p_at_1")  # the second under --protocol lama

    def needs(self, settings: ExtractionSettings) -> dict[str, frozenset[Capability]]:
        """MAPLE generates (ranks when the backend has them); LAMA ranks, exactly over a common
        vocabulary, else within any top k (rank 1 is all P@1 needs)."""
        if settings.protocol == "maple":
            needed = Capability.GENERATE
        else:
            needed = Capability.RANK_EXACT if settings.common_vocab else Capability.RANK_TOP_K
        return {f"task extraction (--protocol {settings.protocol})": frozenset({needed})}

    def plan(self, ctx: RunContext[ExtractionSettings]) -> Plan:
        s = ctx.settings
        model = ctx.model
        split = open_split(ctx.dataset, s.split, s.config, schema="question.v1.json")
        rows = seeded_sample(split.rows, s.limit, s.seed)
        train_rows = open_split(ctx.dataset, "train", split.config, schema="question.v1.json").rows if s.fewshot else []
        if s.prompt == "chat":
            require_chat(model.info)
        probes = build_probes(rows, s.prompt, model.info.kind, s.fewshot, train_rows, s.seed, stop=s.stop)
        deviations = [
            departures.sample_limit(len(rows), len(split.rows), s.limit, s.seed, EVERY_NUMBER),
            prompt_deviation(s.protocol, s.prompt),
            departures.fewshot(
                s.fewshot,
                "the train split (same relation first)",
                "asks each fact zero-shot: the prompt holds no solved examples",
                EVERY_NUMBER + ": the examples change what the model answers and how it ranks the gold",
            ),
        ]
        drops, candidates = {}, None
        if s.protocol == "lama":
            rows, probes, drops, candidates, vocabulary = lama_filter(rows, probes, model, s.common_vocab)
            deviations.append(vocabulary)
        elif s.prompt == "question":
            # MAPLE's instruct models answer through their chat template (KEE records the same)
            deviations.append(departures.maple_question_form("--prompt question", EVERY_NUMBER))
        stop = list(probes[0].stop) if probes else []
        state = ExtractionPlan(
            rows=rows,
            drops=drops,
            candidates=candidates,
            stop=stop,
            ranks=rank_knowledge(model),
            deviations=departures.present(*deviations),
            interpretations=maple_interpretations(s),
        )
        units = chunks(list(zip(rows, probes)), UNIT_ITEMS)
        return Plan(units=units, dataset=split.describe(), depends_on={"stop": stop}, state=state)

    def score(self, ctx: RunContext[ExtractionSettings], state: ExtractionPlan, unit: Unit) -> list[ExtractionItemRow]:
        s = ctx.settings
        pairs: list[tuple[Question, Probe]] = unit.items  # (row, its prompt), planned together
        rows, probes = [r for r, _ in pairs], [p for _, p in pairs]
        texts, golds = [p.prompt for p in probes], [p.gold for p in probes]
        predictions: Sequence[str | None]
        ranks: Sequence[tuple[int | None, float | None]]
        if s.protocol == "lama":
            predictions, ranks = [None] * len(rows), ctx.model.rank_first_token(texts, golds, candidate_ids=state.candidates)
        elif state.ranks == "none":  # a generation-only backend: answers without ranks
            predictions = ctx.model.generate(texts, s.max_new_tokens, stop=state.stop)
            ranks = [(None, None)] * len(rows)
        else:
            # the ranking reuses the generation's prefill
            both = ctx.model.generate_and_rank(texts, golds, s.max_new_tokens, stop=state.stop, candidate_ids=state.candidates)
            predictions, ranks = [t for t, _, _ in both], [(r, lp) for _, r, lp in both]
        out: list[ExtractionItemRow] = []
        for row, probe, (rank, logprob), prediction in zip(rows, probes, ranks, predictions):
            if prediction is None:
                correct = exact = rank == 1
            else:
                prediction = prediction.strip()
                correct = maple_correct(prediction, row["answers"], case_sensitive=s.case_sensitive)
                exact = exact_match(prediction, row["answers"], case_sensitive=s.case_sensitive)
            out.append(
                {
                    "id": row["id"],
                    "relation": row["relation"],
                    "relation_label": row.get("relation_label", ""),
                    "source": row.get("source"),
                    "subject": row["subject"],
                    "object": row["object"],
                    "answers": list(row["answers"]),
                    "frequency_bin": row.get("frequency_bin"),
                    "prompt": ctx.model.render(probe.prompt),
                    "prediction": prediction,
                    "correct": bool(correct),
                    "exact": bool(exact),
                    "gold_rank": None if rank is None else int(rank),  # None: unknown (beyond top k, or no ranks)
                    "gold_logprob": None if logprob is None else float(logprob),
                }
            )
        return out

    def aggregate(self, ctx: RunContext[ExtractionSettings], state: ExtractionPlan, rows: list[dict]) -> Summary:
        protocol, ranks = ctx.settings.protocol, state.ranks
        overall = _estimates(rows, protocol, ranks)
        headline_keys = (
            ["lama_p_at_1", "first_token_p1"]
            if protocol == "lama"
            else ["maple_accuracy", "exact_accuracy", "first_token_p1_macro"]
        )
        by_bin = _grouped(rows, lambda r: r.get("frequency_bin") or "unbinned")
        per_bin = {b: _estimates(rs, protocol, ranks) for b, rs in by_bin.items()}
        differences = u.bin_differences(per_bin)
        metrics = {
            "protocol": protocol,
            "protocol_drops": state.drops,
            "stop": state.stop,
            "ranks": ranks,
            "overall": overall,
            "per_relation": {rel: _estimates(rs, protocol, ranks) for rel, rs in _grouped(rows, lambda r: r["relation"]).items()},
            "per_source": {
                src: _estimates(rs, protocol, ranks) for src, rs in _grouped(rows, lambda r: r.get("source") or "unknown").items()
            },
            "per_frequency_bin": per_bin,
            "frequency_bin_differences": differences,
            "relation_labels": {r["relation"]: r.get("relation_label") or "" for r in rows},
            "known_facts": {
                "file": "known_facts.parquet",
                "count": sum(r["correct"] for r in rows),
                "criterion": "maple_correct" if protocol == "maple" else "gold_rank == 1",
            },
        }
        headline = {k: overall[k] for k in headline_keys}
        first = headline_keys[0] if protocol == "maple" else "first_token_p1"  # a macro mean has no Newcombe difference
        headline.update({f"{first} {contrast}": values[first] for contrast, values in differences.items() if first in values})
        name, reference = PROTOCOLS[protocol]
        return Summary(
            headline=headline, metrics=metrics, protocol=ProtocolRecord(name, reference, state.deviations, state.interpretations)
        )

    def finish(self, ctx: RunContext[ExtractionSettings], state: ExtractionPlan, rows: list[dict], results: dict) -> None:
        """known_facts.parquet: the dataset rows the model answered correctly (D^theta)."""
        import polars as pl

        by_id = {r["id"]: r for r in rows}
        known = [
            {**row, "prediction": by_id[row["id"]]["prediction"], "gold_rank": by_id[row["id"]]["gold_rank"], "correct": True}
            for row in state.rows
            if by_id[row["id"]]["correct"]
        ]
        frame = (
            pl.DataFrame(known, infer_schema_length=None)
            if known
            else pl.DataFrame(
                schema={"id": pl.Utf8, "relation": pl.Utf8, "subject": pl.Utf8, "object": pl.Utf8, "correct": pl.Boolean}
            )
        )
        write_parquet(ctx.run_dir / "known_facts.parquet", frame)
