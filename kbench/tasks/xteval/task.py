"""`kbench evaluate xteval` on the engine: extraction -> downstream retrieval -> gaps.

Units, in plan order (the engine journals each as it finishes; a rerun skips finished ones):

    extraction/e<E>                       D^theta of extraction seed E: one row per fact, its status
                                          (known / unknown / unreadable / untrained)
    <iid|ood>/e<E>-s<S>-f<F>              one fine-tuning run on that D^theta: one row per test query
                                          (correct, gold rank, candidates) and one "run" row (sizes,
                                          training log, downstream and chance accuracy)

The task is collective: every process of `accelerate launch` takes part in every unit (soft
prompts and the cross-encoder train with DDP, retrieval splits its queries), and the main process
journals it. A downstream unit reads its D^theta from the journalled extraction unit (`restore`).
A query row names its fact (`fact_id`) and its run (`run`, with the seeds), so a comparison of two
runs pairs facts, never per-run query numbers.
Soft prompts are stored under `softprompts/seed-<E>/`. Results: `metrics` holds the paper's
figures (mean and std as in Figure 4, `aggregate.py`) per setting; the headline holds acc_D and
Gap 1 (mean over facts, bootstrap over facts), and per setting the downstream accuracy, usable
knowledge and Gap 2 (mean over runs, two-level bootstrap: `headline.py`), and IID - OOD when both ran.
`report.md` and `gaps.png` are written beside results.json.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench.errors import UserError
from kbench.evaluate.task import TASKS, Plan, RunContext, Summary, Task, Unit
from kbench.io import stable_hash
from kbench.metrics import uncertainty as u
from kbench.metrics.clustered import LEVELS, extraction_estimates
from kbench.models.interface import Capability
from kbench.models.training import trainer
from kbench.tasks.xteval.aggregate import aggregate_setting
from kbench.tasks.xteval.criterion import d_theta_criterion
from kbench.tasks.xteval.documents import Triple, load_templates
from kbench.tasks.xteval.extraction import Extraction, discrete_known, read_known_facts, soft_known
from kbench.tasks.xteval.gaps import gap_figures
from kbench.tasks.xteval.headline import downstream_headline
from kbench.tasks.xteval.inference import evaluate_retrieval
from kbench.tasks.xteval.pipeline import XtevalSettings, downstream_generators, load_facts, split_facts
from kbench.tasks.xteval.protocol import xteval_protocol
from kbench.tasks.xteval.softprompt import split_dir_pairs
from kbench.tasks.xteval.training.crossencoder import finetune

EXTRACTION = "extraction"


@dataclass(frozen=True)
class XtevalPlan:
    rows: list[dict]  # the facts D, in plan order
    by_id: dict[str, dict]
    seeds: int  # extraction seeds
    templates: dict[str, list[str]]  # per relation the downstream document templates
    extractions: dict[int, dict[str, str]] = dataclasses.field(default_factory=dict)  # per seed {fact id: status}, by restore


@TASKS.register()
class Xteval(Task[XtevalSettings]):
    Settings = XtevalSettings
    primary_metric = ("usable_knowledge",)
    collective = True

    def needs(self, settings: XtevalSettings) -> dict[str, frozenset[Capability]]:
        # top-1 probes over the full vocabulary; soft prompts and the cross-encoder train
        return {"task xteval": frozenset({Capability.RANK_EXACT, Capability.TRAIN})}

    def plan(self, ctx: RunContext[XtevalSettings]) -> Plan:
        from kbench.dataset import open_split

        s = ctx.settings
        split = open_split(ctx.dataset, s.split, s.config)
        rows = load_facts(ctx.dataset, s.split, s.limit, s.seed, s.config)
        if not rows:
            raise UserError(f"{ctx.dataset}: the {s.split} split is empty")
        seeds = 1 if (s.extraction == "discrete" or s.known_facts) else s.extraction_seeds
        state = XtevalPlan(rows=rows, by_id={str(r["id"]): r for r in rows}, seeds=seeds, templates=_templates(rows, s))
        units = [Unit(f"{EXTRACTION}/e{e}", [e], {"extraction_seed": e}) for e in range(seeds)]
        units += [
            Unit(f"{setting}/e{e}-s{sp}-f{f}", [(setting, e, sp, f)])
            for e in range(seeds)
            for setting in s.settings
            for sp in range(s.split_seeds)
            for f in range(s.finetune_seeds)
        ]
        from kbench.io import sha256_file

        depends = {"known_facts": sha256_file(s.known_facts) if s.known_facts else None}
        return Plan(units=units, dataset=split.describe(), depends_on=depends, state=state)

    # ------------------------------------------------------------------ units
    def score(self, ctx: RunContext[XtevalSettings], state: XtevalPlan, unit: Unit) -> list[dict]:
        if "extraction_seed" in unit.meta:
            return self._extraction(ctx, state, unit.meta["extraction_seed"])
        return self._downstream(ctx, state, *unit.items[0])

    def restore(
        self, ctx: RunContext[XtevalSettings], state: XtevalPlan, unit: Unit, rows: Sequence[Mapping[str, Any]]
    ) -> XtevalPlan:
        if "extraction_seed" not in unit.meta:
            return state
        found = {r["fact_id"]: r["status"] for r in rows}
        return dataclasses.replace(state, extractions={**state.extractions, unit.meta["extraction_seed"]: found})

    def _extraction(self, ctx: RunContext[XtevalSettings], state: XtevalPlan, seed: int) -> list[dict]:
        s = ctx.settings
        network = trainer(ctx.model, "task xteval")
        if s.known_facts is not None:
            found = Extraction(read_known_facts(Path(s.known_facts), set(state.by_id)), [])
        elif s.extraction == "discrete":
            found = discrete_known(network, state.rows, s.top1, s.probe_batch_size)
        else:
            pairs = split_dir_pairs(Path(s.prompt_train_dir)) if s.prompt_train_dir else self._dataset_pairs(ctx)
            found = soft_known(
                network,
                state.rows,
                pairs,
                ctx.run_dir / "softprompts" / f"seed-{seed}",
                s.softprompt,
                seed,
                s.top1,
                s.probe_batch_size,
                write=_is_main(),
            )
        status = {i: "unknown" for i in state.by_id}
        status.update({i: "unreadable" for i in found.unreadable})
        status.update({i: "untrained" for i in found.untrained})
        status.update({i: "known" for i in found.known})
        if not any(v in ("known", "unknown") for v in status.values()):
            raise UserError(
                f"none of the {len(state.rows)} facts can be probed: {len(found.unreadable)} have tails a "
                f"masked LM cannot read at one mask, {len(found.untrained)} belong to relations without "
                "soft-prompt train/dev facts"
            )
        return [
            {
                "id": f"{EXTRACTION}/e{seed}/{fact_id}",
                "kind": "extraction",
                "extraction_seed": seed,
                "fact_id": fact_id,
                "relation": str(row["relation"]),
                "relation_label": row.get("relation_label") or "",
                "subject": str(row["subject"]),
                "object": str(row["object"]),
                "status": status[fact_id],
                "correct": status[fact_id] == "known",
            }
            for fact_id, row in state.by_id.items()
        ]

    def _downstream(
        self, ctx: RunContext[XtevalSettings], state: XtevalPlan, setting: str, e: int, sp: int, f: int
    ) -> list[dict]:
        s = ctx.settings
        known = [i for i, v in state.extractions[e].items() if v == "known"]
        probed = sum(v in ("known", "unknown") for v in state.extractions[e].values())
        by_id = state.by_id
        facts = [Triple(str(by_id[i]["subject"]), str(by_id[i]["relation"]), str(by_id[i]["object"])) for i in known]
        if len(facts) < 3:
            raise UserError(
                f"D^theta holds {len(facts)} fact(s) (acc_D = {len(facts) / probed:.3f}); the downstream "
                "task needs at least 3: use more facts (--limit) or another model"
            )
        train, test = split_facts(facts, setting, sp, s.train_fraction)
        if not test:
            raise UserError(f"the {setting} split left no test facts; use more facts (--limit)")
        fact_ids = dict(zip(facts, known))  # a query names its fact: comparisons pair facts, not query numbers
        train_generator, test_generator = downstream_generators(setting, facts, train, state.templates)
        seed = int(stable_hash([e, sp, f])[:8], 16)
        encoder, log = trainer(ctx.model, "task xteval").run(finetune, train, train_generator, s.finetune, seed)
        queries = evaluate_retrieval(encoder, test, test_generator, s.distractors_per_type, seed, s.finetune)
        del encoder
        key = f"{setting}/e{e}-s{sp}-f{f}"
        base = {"setting": setting, "extraction_seed": e, "split_seed": sp, "finetune_seed": f}
        rows = [
            {
                "id": f"{key}/q{q['index']}",
                "kind": "query",
                "fact_id": fact_ids[test[q["index"]]],
                "run": key,
                **base,
                **{k: v for k, v in q.items() if k != "index"},
                "subject": q["head"],
                "object": q["tail"],
            }
            for q in queries
        ]
        run = {
            "id": key,
            "kind": "run",
            **base,
            "n_train": len(train),
            "n_test": len(test),
            **log,
            "downstream_accuracy": sum(q["correct"] for q in queries) / len(queries),
            "chance_accuracy": sum(1 / q["n_candidates"] for q in queries) / len(queries),
        }
        return [run, *rows]

    # ------------------------------------------------------------------ results
    def aggregate(self, ctx: RunContext[XtevalSettings], state: XtevalPlan, rows: list[dict]) -> Summary:
        s = ctx.settings
        extraction_rows = [r for r in rows if r["kind"] == "extraction"]
        log: list[dict[str, Any]] = []
        acc_d: dict[int, float] = {}
        for e in range(state.seeds):
            statuses = [r["status"] for r in extraction_rows if r["extraction_seed"] == e]
            probed = sum(v in ("known", "unknown") for v in statuses)
            acc_d[e] = statuses.count("known") / probed
            log.append(
                {
                    "seed": e,
                    "acc_D": acc_d[e],
                    "n_known": statuses.count("known"),
                    "n_probed": probed,
                    "n_unreadable": statuses.count("unreadable"),
                    "n_untrained": statuses.count("untrained"),
                }
            )
        # Each fact once (n = facts): the share of extraction seeds that know it. Pooling the seeds'
        # rows in one interval would count every fact once per seed and narrow it.
        known_by_seed: dict[int, dict[str, bool]] = defaultdict(dict)
        for r in extraction_rows:
            if r["status"] in ("known", "unknown"):
                known_by_seed[r["extraction_seed"]][r["fact_id"]] = r["status"] == "known"
        acc_d_estimate, gap1_estimate = extraction_estimates(known_by_seed, seed=s.seed)
        headline = {"acc_D": acc_d_estimate, "gap1": gap1_estimate}
        per_setting = {}
        known = {entry["seed"]: (entry["n_known"], entry["n_probed"]) for entry in log}
        downstream, differences = downstream_headline(rows, known, s.settings, s.seed)
        for setting in s.settings:
            runs = [r for r in rows if r["kind"] == "run" and r["setting"] == setting]
            figures = [
                {
                    "extraction_seed": r["extraction_seed"],
                    "split_seed": r["split_seed"],
                    "finetune_seed": r["finetune_seed"],
                    **gap_figures(acc_d[r["extraction_seed"]], r["downstream_accuracy"]),
                    "chance_accuracy": r["chance_accuracy"],
                }
                for r in runs
            ]
            per_setting[setting] = {**aggregate_setting(figures), "runs": figures}
        headline.update(downstream)
        metrics = {
            "n_facts": len(state.rows),
            "extraction": {
                "method": "known-facts file" if s.known_facts else s.extraction,
                "criterion": self._criterion(ctx),
                "top1": d_theta_criterion(ctx.model.info.kind, s.top1, s.known_facts),
                "seeds": log,
                "not_probed": "leave D (acc_D = n_known / n_probed): unreadable = a masked LM cannot read the "
                "tail at one mask; untrained = no soft-prompt train/dev facts for the relation",
            },
            "statistics": {
                "acc_D, gap1": "mean and sample std over the distinct extraction seeds (paper Fig. 4a)",
                "downstream_accuracy, usable_knowledge, gap2, chance_accuracy": "mean and sample std over the runs, "
                "extraction x split x fine-tune (paper Fig. 4b)",
                "headline": "acc_D, gap1: mean over facts of the share of extraction seeds that know the fact "
                "(n = facts); at one extraction seed a Wilson interval over the facts (facts only), at several a "
                "two-way bootstrap over facts and seeds (`covers` says which); downstream accuracy, usable knowledge, gap2: mean "
                f"over runs with a {LEVELS} (n = distinct test facts; seed {s.seed}, {u.BOOTSTRAP_RESAMPLES} resamples)",
            },
            "settings": per_setting,
            **differences,
        }
        not_probed = {"facts": len(state.rows), "unreadable": log[0]["n_unreadable"], "untrained": log[0]["n_untrained"]}
        distractors = [r["distractors"] for r in rows if r["kind"] == "query"]
        protocol = xteval_protocol(s, ctx.model.info.kind, state.seeds, not_probed, distractors)
        return Summary(headline=headline, metrics=metrics, protocol=protocol)

    def compare_runs(self, runs: list, items: list[list[dict]]):
        """Runs are paired on facts, part by part: query rows are numbered within each run's own split."""
        from kbench.tasks.xteval.compare import comparison

        return comparison(runs, items)

    def report_charts(self, runs: list, out_dir: Path) -> list[tuple[str, str]]:
        from kbench.tasks.xteval.report import runs_gap_chart

        chart = runs_gap_chart(runs, out_dir)
        return [(chart, "acquisition-utilization gaps")] if chart else []

    def finish(self, ctx: RunContext[XtevalSettings], state: XtevalPlan, rows: list[dict], results: dict) -> None:
        from kbench.tasks.xteval.report import write_report

        write_report(ctx.run_dir, results)

    # ------------------------------------------------------------------ helpers
    def _criterion(self, ctx: RunContext[XtevalSettings]) -> str:
        """What "the model predicts the tail at top-1" meant in this run (stated in results.json)."""
        s = ctx.settings
        if s.known_facts is not None:
            return f"known facts from {s.known_facts}"
        sp = s.softprompt
        prompts = (
            f"soft prompts (OptiPrompt, {sp.n_before} + {sp.n_after} vectors around the head)"
            if s.extraction == "soft"
            else "discrete prompts (the dataset's cloze prompt)"
        )
        if ctx.model.info.kind == "masked":
            return f"{prompts}: the single-token tail is the argmax at the mask"
        if s.top1 == "first-token":
            return f"{prompts}: the tail's first token is the argmax (first-token rank 1)"
        return f"{prompts}: every token of the tail is the argmax, teacher-forced (greedy writes the tail)"

    def _dataset_pairs(self, ctx: RunContext[XtevalSettings]):
        """Soft-prompt data from the dataset's own train and dev splits (facts outside D)."""
        from kbench.dataset import has_split, open_split

        tables = {}
        for split in ("train", "dev"):
            if not has_split(ctx.dataset, split, ctx.settings.config):
                raise UserError(
                    f"{ctx.dataset} has no {split} split for soft-prompt training; "
                    "pass --prompt-train-dir DIR (<relation>/train.jsonl, dev.jsonl)"
                )
            tables[split] = open_split(ctx.dataset, split, ctx.settings.config).rows

        def pairs(relation: str) -> tuple[list, list]:
            train, dev = (
                [(r["subject"], r["object"]) for r in tables[split] if r["relation"] == relation] for split in ("train", "dev")
            )
            return train, dev

        return pairs


def _templates(rows: list[dict], s: XtevalSettings) -> dict[str, list[str]]:
    """Per relation the downstream document templates: the dataset's own, or `--templates-dir`'s."""
    own: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r.get("template") and r["template"] not in own[r["relation"]]:
            own[r["relation"]].append(r["template"])
    if s.templates_dir is None:
        return dict(own)
    return load_templates(Path(s.templates_dir), own, None if s.template_variants == ("all",) else s.template_variants)


def _is_main() -> bool:
    from kbench.evaluate.engine import processes

    return processes().is_main
