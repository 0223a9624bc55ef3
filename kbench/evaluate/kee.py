"""`kbench evaluate kee`: knowledge-elicitation techniques against the greedy baseline (MAPLE).

Input: a dataset folder (Question rows). Per item and technique (`kbench.evaluate.techniques`),
through the model: the final answer, MAPLE correctness and strict exact match, and the gold first
token's full-vocabulary rank under the technique. For the shallow/deep partition,
`max(k, sweep_max)` samples per item at each temperature with seed A = 42 on the baseline prompt.

Work units are (stage, 64 items): a stage is a technique or a partition temperature. Outputs:
- `items.parquet` / `items.jsonl`: one row per (technique, item), plus one row per
  (partition temperature, item) holding the seed-A samples' correctness;
- `results.json` (metrics schema `results.kee.v2.json`): per technique Acc, exact Acc, Gain, Loss
  (Wilson intervals; `kbench.metrics.kee`, the one definition), PRS improved/tied/worsened with the
  sign test of Improved vs Worsened, SGR/DGR at each temperature, and the exact McNemar test against
  the baseline on the paired items (b, c, p), overall and per frequency bin; the exact McNemar test
  of every pair of techniques (`pairwise_tests`, Holm-adjusted); head - tail and head - torso
  (unpaired Newcombe differences, `frequency_bin_differences`); the Kendall tau of the method
  ranking at each K against K = `k` with its bootstrap interval; per technique its validated
  parameters, what it fitted (`technique_details`: layers, heads, pools, ITI's probe source) and
  where it departs from MAPLE (`deviations`).
Undefined ratios (empty denominators) have value null. Fitted vectors/probes are stored in
`fits/`, so a rerun refits nothing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from kbench.dataset import has_split, open_split, seeded_sample
from kbench.errors import UserError
from kbench.evaluate.task import TASKS, Plan, RunContext, Summary, Task, TaskSettings, Unit, chunks
from kbench.evaluate.techniques import get_technique, known_techniques
from kbench.evaluate.techniques.base import ANSWER_STOP, MAX_ANSWER_TOKENS, KeeContext, KeeItem, clean_answer, use_chat
from kbench.evaluate.techniques.settings import fit_records, resolve, technique_overrides
from kbench.evaluate.techniques.temperature import sampling_intervention
from kbench.metrics import kee as metrics
from kbench.metrics import uncertainty as u
from kbench.metrics.matching import exact_match, maple_correct
from kbench.models.provenance import code_hash

SEED_A = 42
PARTITION = "partition"
FITTING_SPLITS = ("train", "dev")
UNIT_ITEMS = 64


class KeeSettings(TaskSettings):
    techniques: tuple[str, ...] = ("baseline",)
    k: int = Field(default=20, ge=1)  # samples that split base failures into shallow / deep
    sweep_max: int = Field(default=30, ge=1)  # K = 1..sweep_max for the ranking-stability check
    temperatures: tuple[float, ...] = (0.7, 1.2)
    recite_runs: int = Field(default=20, ge=1)
    fit_pool_limit: int = Field(default=3254, ge=1)  # train (or dev) split items used to fit CAA / ITI (MAPLE's CAA pool)
    top_k: int | None = Field(default=None, ge=1)  # sampling scheme of temperature baselines and partition (None: off)
    top_p: float = Field(default=1.0, gt=0, le=1)  # nucleus mass of that scheme (1.0: off)
    technique_params: dict[str, dict[str, Any]] = {}  # {technique: {param: value}}, validated by each technique
    case_sensitive: bool = False
    prompt: Literal["auto", "chat", "question"] = "auto"  # auto: the chat template when the model has one

    @field_validator("techniques")
    @classmethod
    def _known(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        return parse_techniques(",".join(names))

    @model_validator(mode="after")
    def _sweep_covers_k(self):
        if self.k > self.sweep_max:
            object.__setattr__(self, "sweep_max", self.k)
        return self


def parse_techniques(text: str) -> tuple[str, ...]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    known = known_techniques()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown technique(s) {', '.join(unknown)}; known techniques: {', '.join(known)}")
    if not names:
        raise ValueError(f"--techniques is empty; known techniques: {', '.join(known)}")
    # the baseline is what every technique is compared with, so it always runs, first
    return ("baseline", *dict.fromkeys(n for n in names if n != "baseline"))


def to_item(row: dict) -> KeeItem:
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


def _technique_params(name: str, settings: KeeSettings) -> dict:
    return technique_overrides(name, settings.recite_runs, settings.top_k, settings.top_p, settings.technique_params)


def _row(stage: str, item: KeeItem, **values) -> dict:
    """One item row of a stage (technique or partition temperature); every row has every column."""
    return {
        "id": f"{stage}::{item.id}",
        "technique": stage,
        "item_id": item.id,
        "relation": item.relation,
        "frequency_bin": item.frequency_bin,
        "question": item.question,
        "answers": list(item.answers),
        **{k: None for k in ("answer", "correct", "exact", "gold_rank", "gold_logprob", "sample_correct")},
        **values,
    }


def _output_rows(name: str, items: Sequence[KeeItem], outputs, case_sensitive: bool) -> list[dict]:
    return [
        _row(
            name,
            item,
            answer=out.answer,
            correct=maple_correct(out.answer, item.answers, case_sensitive=case_sensitive),
            exact=exact_match(out.answer, item.answers, case_sensitive=case_sensitive),
            gold_rank=int(out.gold_rank),
            gold_logprob=float(out.gold_logprob),
            detail=json.dumps(out.detail, ensure_ascii=False, sort_keys=True),
        )
        for item, out in zip(items, outputs)
    ]


def _partition_rows(
    context: KeeContext, items: Sequence[KeeItem], temperature: float, n_samples: int, case_sensitive: bool, intervention=None
) -> list[dict]:
    samples = context.runner.sample(
        [context.answer_prompt(i.question) for i in items],
        k=n_samples,
        temperature=temperature,
        seed=SEED_A,
        max_new_tokens=MAX_ANSWER_TOKENS,
        stop=ANSWER_STOP,
        intervention=intervention,
    )  # the sampling scheme's truncation
    name = f"{PARTITION}@{temperature}"
    rows = []
    for item, texts in zip(items, samples):
        answers = [clean_answer(t) for t in texts]
        correct = [maple_correct(a, item.answers, case_sensitive=case_sensitive) for a in answers]
        rows.append(_row(name, item, sample_correct=correct, detail=json.dumps({"samples": answers}, ensure_ascii=False)))
    return rows


def _summary(
    techniques: Sequence[str],
    by_tech: dict[str, dict[str, dict]],
    partitions: dict[float, dict[str, list]],
    ids: Sequence[str],
    k: int,
) -> dict:
    """Metrics of every technique over the items `ids` (the whole split or one frequency bin)."""
    base = {i: by_tech["baseline"][i]["correct"] for i in ids}
    base_rank = {i: by_tech["baseline"][i]["gold_rank"] for i in ids}
    splits = {t: metrics.partition_failures(base, {i: partitions[t][i] for i in ids}, k) for t in partitions}
    out = {}
    for name in techniques:
        rows = by_tech[name]
        correct = {i: rows[i]["correct"] for i in ids}
        rates = {}
        for t, (shallow, deep) in splits.items():
            sgr, dgr = metrics.gain_rates(shallow, deep, correct)
            rates[str(t)] = {"sgr": sgr, "dgr": dgr, "shallow": len(shallow), "deep": len(deep)}
        out[name] = {
            "accuracy": metrics.accuracy(correct),
            "exact_accuracy": metrics.accuracy([rows[i]["exact"] for i in ids]),
            "gain": metrics.gain(base, correct),
            "loss": metrics.loss(base, correct),
            "prs": metrics.prs(base, correct, base_rank, {i: rows[i]["gold_rank"] for i in ids}),
            "beyond_sampling": rates,
            "vs_baseline": u.mcnemar(correct, base),
        }
    return out


def _bin_differences(per_bin: dict[str, dict], techniques: Sequence[str]) -> dict:
    """{"head - tail": {technique: {accuracy, gain}}}: unpaired differences (bins hold different items)."""
    out: dict[str, dict] = {}
    for technique in techniques:
        slices = {b: per_bin[b][technique] for b in per_bin}
        for contrast, metrics_of in u.bin_differences(slices, ("accuracy", "gain")).items():
            out.setdefault(contrast, {})[technique] = metrics_of
    return out


def _stability(techniques: Sequence[str], by_tech, partitions, ids, k: int, sweep_max: int) -> dict:
    """Per temperature and rate: Kendall tau-b of the method ranking at each K vs at K = k, with
    its bootstrap interval over base failures (`metrics.ranking_stability_intervals`)."""
    base = {i: by_tech["baseline"][i]["correct"] for i in ids}
    methods = [t for t in techniques if t != "baseline"]  # the baseline recovers nothing by definition
    method_correct = {m: {i: by_tech[m][i]["correct"] for i in ids} for m in methods}
    return {
        str(t): metrics.ranking_stability_intervals(base, samples, method_correct, sweep_max, k)
        for t, samples in partitions.items()
    }


@TASKS.register("kee")
class KnowledgeElicitation(Task):
    name = "kee"
    Settings = KeeSettings
    metrics_schema = "results.kee.v2.json"

    def plan(self, ctx: RunContext) -> Plan:
        s: KeeSettings = ctx.settings
        if ctx.model.kind != "causal":
            raise UserError("kee generates answers and needs a causal LM")
        self.technique_params = resolve(
            s.techniques, s.recite_runs, s.top_k, s.top_p, s.technique_params, ctx.model.model
        )  # checked before any unit runs
        split = open_split(ctx.dataset, s.split, s.config, schema="question.v1.json")
        rows = seeded_sample(split.rows, s.limit, s.seed)
        if not rows:
            raise UserError(f"{split.path}: the split has no items")
        self.items = [to_item(r) for r in rows]
        self.pool_split = next(
            (name for name in FITTING_SPLITS if name != s.split and has_split(ctx.dataset, name, split.config)), None
        )
        train_items: list[KeeItem] = []
        if self.pool_split is not None:
            pool_rows = seeded_sample(open_split(ctx.dataset, self.pool_split, split.config).rows, s.fit_pool_limit, s.seed)
            train_items = [to_item(r) for r in pool_rows]
        self.context = KeeContext(
            runner=ctx.model,
            fit_dir=ctx.run_dir / "fits",
            train_items=train_items,
            seed=s.seed,
            chat=use_chat(ctx.model.tokenizer, s.prompt),
            evaluated_items=self.items,
        )
        self.stages = [*s.techniques, *(f"{PARTITION}@{t}" for t in s.temperatures)]
        units = [unit for stage in self.stages for unit in chunks(self.items, UNIT_ITEMS, prefix=f"{stage}/")]
        return Plan(units=units, dataset=split.describe())

    def score(self, ctx: RunContext, unit: Unit) -> list[dict]:
        s: KeeSettings = ctx.settings
        stage = unit.key.rsplit("/", 1)[0]
        if stage.startswith(PARTITION):
            temperature = float(stage.split("@")[1])
            return _partition_rows(
                self.context,
                unit.items,
                temperature,
                s.sweep_max,
                s.case_sensitive,
                sampling_intervention(temperature, s.top_k, s.top_p),
            )
        technique = get_technique(stage, **_technique_params(stage, s))
        # the technique's own code enters every cache key of its calls: a fixed technique never
        # gets the old technique's outputs back
        with self.context.runner.produced_by(code_hash(type(technique).__module__)):
            outputs = technique.run(self.context, unit.items)
        return _output_rows(stage, unit.items, outputs, s.case_sensitive)

    def aggregate(self, ctx: RunContext, rows: list[dict]) -> Summary:
        s: KeeSettings = ctx.settings
        by_id = {r["id"]: r for r in rows}
        items = self.items
        by_tech = {name: {i.id: by_id[f"{name}::{i.id}"] for i in items} for name in s.techniques}
        partitions = {t: {i.id: by_id[f"{PARTITION}@{t}::{i.id}"]["sample_correct"] for i in items} for t in s.temperatures}
        ids = [i.id for i in items]
        bins: dict[str, list[str]] = defaultdict(list)
        for item in items:
            bins[item.frequency_bin or "unbinned"].append(item.id)
        overall = _summary(s.techniques, by_tech, partitions, ids, s.k)
        per_bin = {b: _summary(s.techniques, by_tech, partitions, b_ids, s.k) for b, b_ids in sorted(bins.items())}
        fitted = {n: fit_records(by_tech[n].values()) for n in s.techniques}
        result = {
            "techniques": list(s.techniques),
            "technique_params": self.technique_params,
            "technique_details": {
                n: {"params": self.technique_params[n], "fitted": fitted[n], "deviations": self._deviations(n, fitted[n], s)}
                for n in s.techniques
            },
            "seed_a": SEED_A,
            "prompt_form": "chat" if self.context.chat else "question",
            "fitting_pool": f"{self.pool_split} split" if self.pool_split else "two folds of the items",
            "per_technique": overall,
            "pairwise_tests": u.pairwise_mcnemar({n: {i: by_tech[n][i]["correct"] for i in ids} for n in s.techniques}),
            "per_frequency_bin": per_bin,
            "frequency_bin_differences": _bin_differences(per_bin, s.techniques),
            "ranking_stability": _stability(s.techniques, by_tech, partitions, ids, s.k, s.sweep_max),
        }
        headline = {"accuracy": overall["baseline"]["accuracy"]}  # the greedy baseline's
        for contrast, by_technique in result["frequency_bin_differences"].items():
            headline[f"accuracy {contrast}"] = by_technique["baseline"]["accuracy"]
        for name in s.techniques:
            if name != "baseline":
                headline[f"accuracy:{name}"] = overall[name]["accuracy"]
                headline[f"gain:{name}"] = overall[name]["gain"]
                headline[f"loss:{name}"] = overall[name]["loss"]
        return Summary(headline=headline, metrics=result)

    def _deviations(self, name: str, fitted: list[dict], s: KeeSettings) -> list[str]:
        """Where the technique as run departs from MAPLE's configuration (empty: it follows it)."""
        return get_technique(name, **_technique_params(name, s)).deviations(fitted)
