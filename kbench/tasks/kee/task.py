"""`kbench evaluate kee`: knowledge-elicitation techniques against the greedy baseline (MAPLE).

Input: a dataset folder (Question rows). Per item and technique (`kbench.tasks.kee.techniques`),
through the model: the final answer, MAPLE correctness and strict exact match, and the gold first
token's full-vocabulary rank under the technique. For the shallow/deep partition,
`max(k, sweep_max)` samples per item at each temperature with seed A = 42 on the baseline prompt.
The temperature baselines answer by the majority vote of their first 10 seed-B samples (Gain,
Loss; their PRS is undefined: sampling changes neither the prompt nor the weights) and, for SGR /
DGR, keep K new samples drawn with seed B = 0 as MAPLE does (the same draw: `sweep_max` samples,
the first K at each K). MAPLE does not say when K samples recover an item: kbench counts it
recovered when any of them is correct (an interpretation, `sgr-recovery-rule` in the protocol
block) and also reports SGR / DGR under a majority of K and under one sample (`readings`); the
`sgr_recovery = "majority-vote"` option reads the 10-sample vote instead, whatever K, and is
recorded as a deviation.

Work units are (stage, 64 items): a stage is a technique or a partition temperature. Outputs:
- `items.parquet` / `items.jsonl`: one row per (technique, item), plus one row per
  (partition temperature, item) holding the seed-A samples' correctness; a temperature
  baseline's row holds its seed-B samples (`detail.samples`) and their correctness (`sample_correct`);
- `results.json` (metrics schema `results.kee.v2.json`): per technique Acc, exact Acc, Gain, Loss
  (Wilson intervals; `kbench.tasks.kee.metrics`, the one definition), PRS improved/tied/worsened with the
  sign test of Improved vs Worsened, SGR/DGR at each temperature (a temperature baseline's also
  under each reading of "recovered", `beyond_sampling.*.readings`), and the exact McNemar test against
  the baseline on the paired items (b, c, p), overall and per frequency bin; the exact McNemar test
  of every pair of techniques (`pairwise_tests`, Holm-adjusted); head - tail and head - torso
  (unpaired Newcombe differences, `frequency_bin_differences`); the Kendall tau of the method
  ranking at each K against K = `k` with its bootstrap interval; per technique its validated
  parameters, what it fitted (`technique_details`: layers, heads, pools, ITI's probe source) and
  the ids of its protocol deviations; the run's `protocol` block (`kee_protocol.py`) lists every
  departure from MAPLE, the techniques' and the run's own.
Undefined ratios (empty denominators) have value null. Fitted vectors/probes are stored in
`fits/`, so a rerun refits nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from kbench.dataset import has_split, open_split, seeded_sample
from kbench.errors import UserError
from kbench.evaluate.departures import sample_limit
from kbench.evaluate.task import TASKS, Plan, RunContext, Summary, Task, TaskSettings, Unit, chunks
from kbench.metrics import uncertainty as u
from kbench.models.interface import Capability
from kbench.models.provenance import code_hash
from kbench.protocol import Deviation, ProtocolRecord
from kbench.tasks.kee import metrics
from kbench.tasks.kee.protocol import kee_protocol
from kbench.tasks.kee.rows import PARTITION, SEED_A, KeeItemRow, output_rows, partition_rows, to_item
from kbench.tasks.kee.techniques import TECHNIQUES, get_technique, is_sampling, known_techniques
from kbench.tasks.kee.techniques.base import KeeContext, KeeItem, use_chat
from kbench.tasks.kee.techniques.settings import fit_records, resolve, technique_overrides
from kbench.tasks.kee.techniques.temperature import sampling_intervention

FITTING_SPLITS = ("train", "dev")
UNIT_ITEMS = 64
ALL_TECHNIQUES = ("baseline", "temp0.7", "temp1.2", "recite", "genread", "caa", "iti", "decore", "activation_decoding")


class KeeSettings(TaskSettings):
    # MAPLE's full set, in its table order: a KEE run compares techniques, so the CLI and the library run them all
    techniques: tuple[str, ...] = Field(
        ALL_TECHNIQUES, description="Techniques to compare (MAPLE's nine by default); the baseline always runs."
    )
    k: int = Field(default=20, ge=1, description="Seed-A samples that split base failures into shallow / deep.")
    sweep_max: int = Field(default=30, ge=1, description="Ranking stability is checked at K = 1..this.")
    temperatures: tuple[float, ...] = Field((0.7, 1.2), description="Temperatures of the shallow/deep partition.")
    recite_runs: int = Field(default=20, ge=1, description="RECITE recite-and-answer runs (majority vote).")
    fit_pool_limit: int = Field(default=3254, ge=1, description="Train/dev items that fit CAA and ITI (MAPLE: 3,254).")
    top_k: int | None = Field(default=None, ge=1, description="Sampling scheme (temperature baselines, partition): top-k.")
    top_p: float = Field(default=1.0, gt=0, le=1, description="Sampling scheme: nucleus mass (1.0: no truncation).")
    technique_params: dict[str, dict[str, Any]] = {}  # {technique: {param: value}}, validated by each technique
    case_sensitive: bool = Field(False, description="MAPLE matching keeps case.")
    prompt: Literal["auto", "chat", "question"] = Field("auto", description="auto: the chat template when the model has one.")
    sgr_recovery: Literal["seed-b", "majority-vote"] = Field(
        "seed-b",
        description="SGR/DGR of the temperature baselines: seed-b reads K new seed-B samples (as MAPLE), an item "
        "recovered when any of them is correct (kbench's reading; the others are reported beside it); majority-vote "
        "reads the 10-sample vote whatever K (a recorded deviation).",
    )

    @field_validator("techniques", mode="before")
    @classmethod
    def _known(cls, names) -> tuple[str, ...]:
        # the library takes "caa,iti" as the CLI does, or a list of names
        return parse_techniques(names if isinstance(names, str) else ",".join(map(str, names)))

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


def recovery_samples(settings: KeeSettings) -> int:
    """Seed-B samples a temperature baseline keeps for SGR / DGR: K new samples at every K of the
    sweep (MAPLE), or none when SGR / DGR read the majority vote."""
    return settings.sweep_max if settings.sgr_recovery == "seed-b" else 0


def _technique_params(name: str, settings: KeeSettings) -> dict:
    s = settings
    return technique_overrides(name, s.recite_runs, s.top_k, s.top_p, s.technique_params, recovery_samples(s))


def run_protocol(
    settings: KeeSettings, chat: bool, pool: tuple[str, int, int] | None, fitted: dict[str, list[dict]]
) -> tuple[ProtocolRecord, dict[str, list[Deviation]]]:
    """(the run's protocol block, each technique's own deviations) from the settings, the prompt
    form, the fitting pool (split, its items, items used; None: two folds) and each technique's
    fit records (`kee_protocol`)."""
    s = settings
    params = {n: get_technique(n, **_technique_params(n, s)) for n in s.techniques}
    deviations = {n: technique.deviations(fitted.get(n, [])) for n, technique in params.items()}
    resolved = {n: technique.params() for n, technique in params.items()}
    return kee_protocol(s, chat, pool, resolved, deviations, fitted), deviations


def _summary(
    techniques: Sequence[str],
    by_tech: dict[str, dict[str, dict]],
    partitions: dict[float, dict[str, list]],
    ids: Sequence[str],
    k: int,
) -> dict:
    """Metrics of every technique over the items `ids` (the whole split or one frequency bin).
    SGR / DGR count an item recovered as `metrics.recovered` reads the row: the seed-B samples
    of a temperature baseline (`sample_correct`, one of the first k correct: the run's reading),
    else the answer. A technique with seed-B samples also gets SGR / DGR under every reading
    (`readings`, `metrics.READINGS`) and no PRS (`metrics.SAMPLING_PRS_UNDEFINED`)."""
    base = {i: by_tech["baseline"][i]["correct"] for i in ids}
    base_rank = {i: by_tech["baseline"][i]["gold_rank"] for i in ids}
    splits = {t: metrics.partition_failures(base, {i: partitions[t][i] for i in ids}, k) for t in partitions}
    out = {}
    for name in techniques:
        rows = by_tech[name]
        correct = {i: rows[i]["correct"] for i in ids}
        outcomes = {i: _outcome(rows[i]) for i in ids}
        recovered = metrics.recovered_by(outcomes, k)
        seed_b = bool(ids) and all(rows[i]["sample_correct"] is not None for i in ids)
        rates = {}
        for t, (shallow, deep) in splits.items():
            sgr, dgr = metrics.gain_rates(shallow, deep, recovered)
            rates[str(t)] = {"sgr": sgr, "dgr": dgr, "shallow": len(shallow), "deep": len(deep)}
            if seed_b:
                rates[str(t)]["readings"] = metrics.reading_rates(shallow, deep, outcomes, k)
        out[name] = {
            "accuracy": metrics.accuracy(correct),
            "exact_accuracy": metrics.accuracy([rows[i]["exact"] for i in ids]),
            "gain": metrics.gain(base, correct),
            "loss": metrics.loss(base, correct),
            "prs": metrics.prs_undefined(metrics.SAMPLING_PRS_UNDEFINED)
            if is_sampling(name)
            else _prs(base, correct, base_rank, {i: rows[i]["gold_rank"] for i in ids}),
            "beyond_sampling": rates,
            "vs_baseline": u.mcnemar(correct, base),
        }
    return out


def _outcome(row: dict):
    """What SGR / DGR read of a technique's row: its seed-B samples' correctness where it kept
    them, else its answer's correctness."""
    return row["correct"] if row["sample_correct"] is None else list(row["sample_correct"])


def _prs(base, correct, base_rank, rank) -> dict:
    """PRS with its sign test (metrics.prs); undefined, with the reason, where the model gave no
    exact ranks (a rank known only within a server's top k would change which items count)."""
    if any(base_rank[i] is None or rank[i] is None for i in base):
        return metrics.prs_undefined(
            "the model has no exact full-vocabulary ranks (capability rank_exact); PRS is not approximated"
        )
    return metrics.prs(base, correct, base_rank, rank)


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
    if not methods:  # the baseline alone: no ranking to be stable
        return {}
    method_correct = {m: {i: _outcome(by_tech[m][i]) for i in ids} for m in methods}
    return {
        str(t): metrics.ranking_stability_intervals(base, samples, method_correct, sweep_max, k)
        for t, samples in partitions.items()
    }


@dataclass(frozen=True)
class KeePlan:
    technique_params: dict[str, dict]  # per technique its validated parameters
    items: list[KeeItem]  # the evaluated items, in plan order
    pool_split: str | None  # the split CAA / ITI fit on (None: two folds of the items)
    pool_available: int  # items in that split before the fit-pool limit (0 without one)
    split_size: int  # items in the evaluated split before --limit
    context: KeeContext  # what every technique runs with


@TASKS.register()
class KnowledgeElicitation(Task[KeeSettings]):
    Settings = KeeSettings
    primary_metric = ("accuracy",)

    def explorer_table(self, rows: list[dict], dataset: dict[str, dict]) -> dict:
        from kbench.tasks.kee.report import explorer_table

        return explorer_table(rows, dataset)

    def needs(self, settings: KeeSettings) -> dict[str, frozenset[Capability]]:
        """Each chosen technique's declared needs (its class's `needs`); the partition samples."""
        out = {"task kee (the shallow/deep partition)": frozenset({Capability.GENERATE})}
        for name in settings.techniques:
            out[f"technique {name}"] = TECHNIQUES.get(name)[0].needs
        return out

    def plan(self, ctx: RunContext[KeeSettings]) -> Plan:
        s = ctx.settings
        if ctx.model.info.kind != "causal":
            raise UserError("kee generates answers and needs a causal LM")
        # checked before any unit runs
        technique_params = resolve(
            s.techniques, s.recite_runs, s.top_k, s.top_p, s.technique_params, ctx.model, recovery_samples(s)
        )
        split = open_split(ctx.dataset, s.split, s.config, schema="question.v1.json")
        rows = seeded_sample(split.rows, s.limit, s.seed)
        if not rows:
            raise UserError(f"{split.path}: the split has no items")
        items = [to_item(r) for r in rows]
        fitting = [name for name in FITTING_SPLITS if name != s.split and has_split(ctx.dataset, name, split.config)]
        pool_split = fitting[0] if fitting else None
        train_items: list[KeeItem] = []
        pool_available = 0
        if pool_split is not None:
            all_pool_rows = open_split(ctx.dataset, pool_split, split.config).rows
            pool_available = len(all_pool_rows)
            train_items = [to_item(r) for r in seeded_sample(all_pool_rows, s.fit_pool_limit, s.seed)]
        context = KeeContext(
            model=ctx.model,
            fit_dir=ctx.run_dir / "fits",
            train_items=train_items,
            seed=s.seed,
            chat=use_chat(ctx.model.info, s.prompt),
            evaluated_items=items,
        )
        units = [unit for name in s.techniques for unit in chunks(items, UNIT_ITEMS, f"{name}/", {"technique": name})]
        units += [
            unit for t in s.temperatures for unit in chunks(items, UNIT_ITEMS, f"{PARTITION}@{t}/", {"partition_temperature": t})
        ]
        state = KeePlan(
            technique_params=technique_params,
            items=items,
            pool_split=pool_split,
            pool_available=pool_available,
            split_size=len(split.rows),
            context=context,
        )
        return Plan(units=units, dataset=split.describe(), state=state)

    def score(self, ctx: RunContext[KeeSettings], state: KeePlan, unit: Unit) -> list[KeeItemRow]:
        s = ctx.settings
        if "partition_temperature" in unit.meta:
            temperature = unit.meta["partition_temperature"]
            return partition_rows(
                state.context,
                unit.items,
                temperature,
                s.sweep_max,
                s.case_sensitive,
                sampling_intervention(temperature, s.top_k, s.top_p),
            )
        name = unit.meta["technique"]
        technique = get_technique(name, **_technique_params(name, s))
        # the technique's own code enters every cache key of its calls: a fixed technique never
        # gets the old technique's outputs back
        with state.context.model.produced_by(code_hash(type(technique).__module__)):
            outputs = technique.run(state.context, unit.items)
        return output_rows(name, unit.items, outputs, s.case_sensitive)

    def aggregate(self, ctx: RunContext[KeeSettings], state: KeePlan, rows: list[dict]) -> Summary:
        s = ctx.settings
        by_id = {r["id"]: r for r in rows}
        items = state.items
        by_tech = {name: {i.id: by_id[f"{name}::{i.id}"] for i in items} for name in s.techniques}
        partitions = {t: {i.id: by_id[f"{PARTITION}@{t}::{i.id}"]["sample_correct"] for i in items} for t in s.temperatures}
        ids = [i.id for i in items]
        bins: dict[str, list[str]] = defaultdict(list)
        for item in items:
            bins[item.frequency_bin or "unbinned"].append(item.id)
        overall = _summary(s.techniques, by_tech, partitions, ids, s.k)
        per_bin = {b: _summary(s.techniques, by_tech, partitions, b_ids, s.k) for b, b_ids in sorted(bins.items())}
        fitted = {n: fit_records(by_tech[n].values()) for n in s.techniques}
        pool = (state.pool_split, state.pool_available, len(state.context.train_items)) if state.pool_split else None
        protocol, deviations = run_protocol(s, state.context.chat, pool, fitted)
        limited = sample_limit(len(state.items), state.split_size, s.limit, s.seed, "Acc, Gain, Loss, PRS, SGR, DGR")
        protocol = protocol.with_deviations([limited] if limited else [])
        result: dict[str, Any] = {
            "techniques": list(s.techniques),
            "technique_params": state.technique_params,
            "technique_details": {
                n: {"params": state.technique_params[n], "fitted": fitted[n], "deviations": [d.id for d in deviations[n]]}
                for n in s.techniques
            },
            "seed_a": SEED_A,
            "prompt_form": "chat" if state.context.chat else "question",
            "fitting_pool": f"{state.pool_split} split" if state.pool_split else "two folds of the items",
            "per_technique": overall,
            "pairwise_tests": u.pairwise_mcnemar({n: {i: by_tech[n][i]["correct"] for i in ids} for n in s.techniques}),
            "per_frequency_bin": per_bin,
            "frequency_bin_differences": _bin_differences(per_bin, s.techniques),
            "ranking_stability": _stability(s.techniques, by_tech, partitions, ids, s.k, s.sweep_max),
            "shallow_by_k": {
                str(t): metrics.shallow_counts({i: by_tech["baseline"][i]["correct"] for i in ids}, samples, s.sweep_max)
                for t, samples in partitions.items()
            },
        }
        headline = {"accuracy": overall["baseline"]["accuracy"]}  # the greedy baseline's
        for contrast, by_technique in result["frequency_bin_differences"].items():
            headline[f"accuracy {contrast}"] = by_technique["baseline"]["accuracy"]
        for name in s.techniques:
            if name != "baseline":
                headline[f"accuracy:{name}"] = overall[name]["accuracy"]
                headline[f"gain:{name}"] = overall[name]["gain"]
                headline[f"loss:{name}"] = overall[name]["loss"]
        return Summary(headline=headline, metrics=result, protocol=protocol)

    def finish(self, ctx: RunContext[KeeSettings], state: KeePlan, rows: list[dict], results: dict) -> None:
        """comparison.md / comparison.csv (every technique against the baseline) and the PRS and
        Gain/Loss charts, beside results.json: the CLI and `kbench.evaluate("kee")` write the same files."""
        from kbench.tasks.kee.report import write_report

        write_report(results, ctx.run_dir)
