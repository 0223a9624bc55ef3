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
Soft prompts are stored under `softprompts/seed-<E>/`. Results: `metrics` holds the paper's
figures (mean and std as in Figure 4, `aggregate.py`) per setting; the headline holds acc_D and
Gap 1 (Wilson, pooled over extraction seeds), and per setting the downstream accuracy (Wilson,
pooled over the runs' test queries) and usable knowledge and Gap 2 (mean over runs, bootstrap).
`report.md` and `gaps.png` are written beside results.json.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from kbench.errors import UserError
from kbench.evaluate.task import TASKS, Plan, RunContext, Summary, Task, Unit
from kbench.evaluate.xteval.aggregate import aggregate_setting
from kbench.evaluate.xteval.crossencoder import finetune
from kbench.evaluate.xteval.documents import Triple, load_templates
from kbench.evaluate.xteval.extraction import Extraction, discrete_known, read_known_facts, soft_known
from kbench.evaluate.xteval.inference import evaluate_retrieval
from kbench.evaluate.xteval.pipeline import XtevalSettings, downstream_generators, load_facts, split_facts
from kbench.evaluate.xteval.softprompt import split_dir_pairs
from kbench.io import stable_hash
from kbench.metrics import uncertainty as u
from kbench.metrics.gaps import gap_figures

EXTRACTION = "extraction"


@TASKS.register("xteval")
class Xteval(Task):
    name = "xteval"
    Settings = XtevalSettings
    primary_metric = ("usable_knowledge",)
    metrics_schema = "results.xteval.v2.json"
    collective = True

    def plan(self, ctx: RunContext) -> Plan:
        from kbench.dataset import open_split

        s: XtevalSettings = ctx.settings
        self._settings = s
        split = open_split(ctx.dataset, s.split, s.config)
        self.rows = load_facts(ctx.dataset, s.split, s.limit, s.seed, s.config)
        if not self.rows:
            raise UserError(f"{ctx.dataset}: the {s.split} split is empty")
        self.by_id = {str(r["id"]): r for r in self.rows}
        self.extractions: dict[int, dict] = {}
        self.seeds = 1 if (s.extraction == "discrete" or s.known_facts) else s.extraction_seeds
        units = [Unit(f"{EXTRACTION}/e{e}", [e]) for e in range(self.seeds)]
        units += [
            Unit(f"{setting}/e{e}-s{sp}-f{f}", [(setting, e, sp, f)])
            for e in range(self.seeds)
            for setting in s.settings
            for sp in range(s.split_seeds)
            for f in range(s.finetune_seeds)
        ]
        from kbench.io import sha256_file

        depends = {"known_facts": sha256_file(s.known_facts) if s.known_facts else None}
        return Plan(units=units, dataset=split.describe(), depends_on=depends)

    # ------------------------------------------------------------------ units
    def score(self, ctx: RunContext, unit: Unit) -> list[dict]:
        if unit.key.startswith(EXTRACTION):
            return self._extraction(ctx, unit.items[0])
        return self._downstream(ctx, *unit.items[0])

    def restore(self, ctx: RunContext, unit: Unit, rows: list[dict]) -> None:
        if unit.key.startswith(EXTRACTION):
            self.extractions[unit.items[0]] = {r["fact_id"]: r["status"] for r in rows}

    def _extraction(self, ctx: RunContext, seed: int) -> list[dict]:
        s: XtevalSettings = ctx.settings
        loaded = ctx.model.loaded
        if s.known_facts is not None:
            found = Extraction(read_known_facts(Path(s.known_facts), set(self.by_id)), [])
        elif s.extraction == "discrete":
            found = discrete_known(loaded, self.rows, s.top1, s.probe_batch_size)
        else:
            pairs = split_dir_pairs(Path(s.prompt_train_dir)) if s.prompt_train_dir else self._dataset_pairs(ctx)
            found = soft_known(
                loaded,
                self.rows,
                pairs,
                ctx.run_dir / "softprompts" / f"seed-{seed}",
                s.softprompt,
                seed,
                s.top1,
                s.probe_batch_size,
                write=_is_main(),
            )
        status = {i: "unknown" for i in self.by_id}
        status.update({i: "unreadable" for i in found.unreadable})
        status.update({i: "untrained" for i in found.untrained})
        status.update({i: "known" for i in found.known})
        if not any(v in ("known", "unknown") for v in status.values()):
            raise UserError(
                f"none of the {len(self.rows)} facts can be probed: {len(found.unreadable)} have tails a "
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
            for fact_id, row in self.by_id.items()
        ]

    def _downstream(self, ctx: RunContext, setting: str, e: int, sp: int, f: int) -> list[dict]:
        s: XtevalSettings = ctx.settings
        known = [i for i, v in self.extractions[e].items() if v == "known"]
        probed = sum(v in ("known", "unknown") for v in self.extractions[e].values())
        facts = [
            Triple(str(self.by_id[i]["subject"]), str(self.by_id[i]["relation"]), str(self.by_id[i]["object"])) for i in known
        ]
        if len(facts) < 3:
            raise UserError(
                f"D^theta holds {len(facts)} fact(s) (acc_D = {len(facts) / probed:.3f}); the downstream "
                "task needs at least 3: use more facts (--limit) or another model"
            )
        train, test = split_facts(facts, setting, sp, s.train_fraction)
        if not test:
            raise UserError(f"the {setting} split left no test facts; use more facts (--limit)")
        train_generator, test_generator = downstream_generators(setting, facts, train, self._templates())
        seed = int(stable_hash([e, sp, f])[:8], 16)
        encoder, log = finetune(ctx.model.loaded, train, train_generator, s.finetune, seed)
        queries = evaluate_retrieval(encoder, test, test_generator, s.distractors_per_type, seed, s.finetune)
        del encoder
        key = f"{setting}/e{e}-s{sp}-f{f}"
        base = {"setting": setting, "extraction_seed": e, "split_seed": sp, "finetune_seed": f}
        rows = [
            {
                "id": f"{key}/q{q['index']}",
                "kind": "query",
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
    def aggregate(self, ctx: RunContext, rows: list[dict]) -> Summary:
        s: XtevalSettings = ctx.settings
        extraction_rows = [r for r in rows if r["kind"] == "extraction"]
        log, acc_d = [], {}
        for e in range(self.seeds):
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
        # rows in a Wilson interval would count every fact once per seed and narrow the interval.
        seeds_known: dict[str, list[bool]] = defaultdict(list)
        for r in extraction_rows:
            if r["status"] in ("known", "unknown"):
                seeds_known[r["fact_id"]].append(r["status"] == "known")
        known_share = [sum(k) / len(k) for k in seeds_known.values()]
        headline = {
            "acc_D": u.mean(known_share, seed=s.seed),
            "gap1": u.mean([1 - x for x in known_share], seed=s.seed),
        }
        per_setting = {}
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
            # runs share test queries across fine-tuning seeds: a mean over runs (n = runs), as the paper
            headline[f"{setting}_downstream_accuracy"] = u.mean([r["downstream_accuracy"] for r in runs], seed=s.seed)
            headline[f"{setting}_usable_knowledge"] = u.mean([x["usable_knowledge"] for x in figures], seed=s.seed)
            headline[f"{setting}_gap2"] = u.mean([x["gap2"] for x in figures], seed=s.seed)
        metrics = {
            "n_facts": len(self.rows),
            "extraction": {
                "method": "known-facts file" if s.known_facts else s.extraction,
                "criterion": self._criterion(ctx),
                "seeds": log,
                "not_probed": "leave D (acc_D = n_known / n_probed): unreadable = a masked LM cannot read the "
                "tail at one mask; untrained = no soft-prompt train/dev facts for the relation",
            },
            "statistics": {
                "acc_D, gap1": "mean and sample std over the distinct extraction seeds (paper Fig. 4a)",
                "downstream_accuracy, usable_knowledge, gap2, chance_accuracy": "mean and sample std over the runs, "
                "extraction x split x fine-tune (paper Fig. 4b)",
                "headline": "acc_D, gap1: mean over facts of the share of extraction seeds that know the fact, "
                "with a bootstrap over facts (n = facts); downstream accuracy, usable knowledge, gap2: mean "
                "over runs with a bootstrap over runs (n = runs)",
            },
            "settings": per_setting,
        }
        return Summary(headline=headline, metrics=metrics)

    def finish(self, ctx: RunContext, rows: list[dict], results: dict) -> None:
        from kbench.evaluate.xteval.report import write_report

        write_report(ctx.run_dir, results)

    # ------------------------------------------------------------------ helpers
    def _criterion(self, ctx: RunContext) -> str:
        """What "the model predicts the tail at top-1" meant in this run (stated in results.json)."""
        s: XtevalSettings = ctx.settings
        if s.known_facts is not None:
            return f"known facts from {s.known_facts}"
        sp = s.softprompt
        prompts = (
            f"soft prompts (OptiPrompt, {sp.n_before} + {sp.n_after} vectors around the head)"
            if s.extraction == "soft"
            else "discrete prompts (the dataset's cloze prompt)"
        )
        if ctx.model.kind == "masked":
            return f"{prompts}: the single-token tail is the argmax at the mask"
        if s.top1 == "first-token":
            return f"{prompts}: the tail's first token is the argmax (first-token rank 1)"
        return f"{prompts}: every token of the tail is the argmax, teacher-forced (greedy writes the tail)"

    def _dataset_pairs(self, ctx: RunContext):
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
            return tuple(
                [(r["subject"], r["object"]) for r in tables[split] if r["relation"] == relation] for split in ("train", "dev")
            )

        return pairs

    def _templates(self) -> dict[str, list[str]]:
        if not hasattr(self, "_template_cache"):
            own: dict[str, list[str]] = defaultdict(list)
            for r in self.rows:
                if r.get("template") and r["template"] not in own[r["relation"]]:
                    own[r["relation"]].append(r["template"])
            s = self._settings
            self._template_cache = (
                dict(own)
                if s.templates_dir is None
                else load_templates(Path(s.templates_dir), own, None if s.template_variants == ("all",) else s.template_variants)
            )
        return self._template_cache


def _is_main() -> bool:
    from kbench.evaluate.engine import processes

    return processes().is_main
