"""`kbench evaluate xteval`: extraction -> downstream retrieval -> gaps, resumable per unit.

Run directory (one per command; rerunning the same command continues where it stopped):

    OUT/config.json                          everything that changes the results (checked on rerun, RunDir)
    OUT/extraction/seed-<e>.json             D^theta of one extraction seed: known ids, unreadable ids, acc_D
    OUT/softprompts/seed-<e>/<rel>.safetensors   soft prompts (--extraction soft, the default)
    OUT/units/<iid|ood>/e<e>-s<s>-f<f>.json  one fine-tuning run: downstream accuracy, chance, per query
    OUT/results.json                         schema results.xteval.v1 (mean, std, per-run values)
    OUT/report.md, OUT/gaps.png              the table and the paper-style stacked gap chart

Extraction (`extraction.py`, `probes.py`): soft prompts (the paper's) or the dataset's discrete
cloze prompts; either way a fact is known when its tail is predicted at top-1 (`top1`: the first
gold token by default, or every gold token; masked LMs: the single token at the mask).
Seeds: extraction x split x fine-tune (paper 3 x 3 x 3 = 27 runs per setting). Discrete
extraction is deterministic, so it has one extraction seed whatever the count asked for. Means
and stds follow the paper (`aggregate.py`): acc_D and Gap 1 over the extraction seeds, the
downstream figures over the runs.
Splits: "iid" cuts D^theta 60/40 at random; "ood" puts 60% of its relations (and their facts)
in train and the rest in test, disjoint. Training documents come from `downstream_generators`:
under OOD they are drawn from the train facts alone, so no template, relation or entity of a
held-out relation reaches training.
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kbench.errors import UserError
from kbench.evaluate.xteval.aggregate import aggregate_setting
from kbench.evaluate.xteval.crossencoder import FinetuneConfig, finetune
from kbench.evaluate.xteval.documents import DocumentGenerator, Triple, load_templates
from kbench.evaluate.xteval.extraction import Extraction, discrete_known, read_known_facts, soft_known
from kbench.evaluate.xteval.inference import evaluate_retrieval
from kbench.evaluate.xteval.softprompt import SoftPromptConfig, split_dir_pairs
from kbench.io import read_json, sha256_file, stable_hash, write_json
from kbench.metrics.gaps import gap_figures

RESULTS_SCHEMA = "results.xteval.v1"


class XtevalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    extraction: Literal["discrete", "soft"] = "soft"          # the paper: soft prompts (OptiPrompt)
    top1: Literal["first-token", "full-answer"] = "first-token"   # causal LMs: which gold tokens must be the argmax
    settings: list[Literal["iid", "ood"]] = ["iid"]
    extraction_seeds: int = Field(3, ge=1)
    split_seeds: int = Field(3, ge=1)
    finetune_seeds: int = Field(3, ge=1)
    dataset_split: str = "test"
    limit: int | None = Field(None, ge=1)
    train_fraction: float = Field(0.6, gt=0, lt=1)
    distractors_per_type: int = Field(50, ge=1)
    probe_batch_size: int = Field(32, ge=1)
    finetune: FinetuneConfig = FinetuneConfig()
    softprompt: SoftPromptConfig = SoftPromptConfig()


def load_facts(dataset_dir: Path, split: str, limit: int | None) -> list[dict]:
    """The facts D: the rows the extraction task reads for the same split and --limit (its
    seeded sample, seed 0), so `evaluate extraction` and `evaluate xteval` see the same D."""
    from kbench.dataset import read_rows, seeded_sample, split_path

    return seeded_sample(read_rows(split_path(Path(dataset_dir), split, None)), limit, 0)


def split_facts(facts: list[Triple], setting: str, seed: int, train_fraction: float) -> tuple[list[Triple], list[Triple]]:
    rng = random.Random(f"split-{setting}-{seed}")
    if setting == "iid":
        shuffled = list(facts)
        rng.shuffle(shuffled)
        cut = round(len(shuffled) * train_fraction)
        return shuffled[:cut], shuffled[cut:]
    relations = sorted({f.relation for f in facts})
    if len(relations) < 2:
        raise UserError(f"the OOD split needs D^theta to span at least 2 relations; it spans {len(relations)}")
    rng.shuffle(relations)
    cut = min(len(relations) - 1, max(1, round(len(relations) * train_fraction)))
    train_rel = set(relations[:cut])
    return [f for f in facts if f.relation in train_rel], [f for f in facts if f.relation not in train_rel]


def downstream_generators(setting: str, facts: list[Triple], train: list[Triple],
                          templates: dict[str, list[str]]) -> tuple[DocumentGenerator, DocumentGenerator]:
    """(training generator, test generator). IID training samples its free slots from all of
    D^theta, as the paper's P(d | H, R, T) does; OOD training sees only the train relations'
    facts and templates, or a held-out relation would leak into training through the (h,.,t)
    negatives (its template) and the entity pools. The test side draws from all of D^theta."""
    pool = facts if setting == "iid" else train
    relations = {f.relation for f in pool}
    train_generator = DocumentGenerator(pool, {r: ts for r, ts in templates.items() if r in relations})
    return train_generator, DocumentGenerator(facts, templates)


class Run:
    """One XTEVAL run directory; `execute()` computes what is missing and writes the results."""

    def __init__(self, dataset_dir: Path, model: str, out: Path, cfg: XtevalConfig, *, device: str = "auto",
                 dtype: str = "float32", known_facts: Path | None = None, templates_dir: Path | None = None,
                 template_variants: tuple[str, ...] | None = ("LPAQA",), prompt_train_dir: Path | None = None):
        self.dataset_dir, self.model_name, self.out, self.cfg = Path(dataset_dir), model, Path(out), cfg
        self.device, self.dtype = device, dtype
        self.known_facts, self.templates_dir, self.template_variants = known_facts, templates_dir, template_variants
        self.prompt_train_dir = prompt_train_dir
        self.rows = load_facts(self.dataset_dir, cfg.dataset_split, cfg.limit)
        if not self.rows:
            raise UserError(f"{self.dataset_dir}: the {cfg.dataset_split} split is empty")
        self.by_id = {str(r["id"]): r for r in self.rows}

    # ------------------------------------------------------------------ driver
    def execute(self, console=None) -> dict:
        from accelerate import Accelerator

        from kbench.evaluate.rundir import RunDir
        from kbench.models.loading import load_model

        accelerator = Accelerator()
        device = str(accelerator.device) if self.device == "auto" else self.device
        loaded = load_model(self.model_name, dtype=self.dtype, device=device)
        if not accelerator.is_main_process:  # the main process holds the run directory's lock
            return self._execute(loaded, accelerator, console)
        with RunDir(self.out, "xteval", self._config(loaded.identity)):
            return self._execute(loaded, accelerator, console)

    def _config(self, identity: str) -> dict:
        """Everything that changes a unit's result; a rerun with other values is refused by RunDir.
        The settings (iid/ood) and seed counts are left out: units are keyed by them, so a rerun
        with `--split both` or more `--seeds` reuses every finished unit and adds the missing ones."""
        from kbench.dataset import split_path

        dataset_file = split_path(self.dataset_dir, self.cfg.dataset_split, None)
        unit_settings = self.cfg.model_dump(exclude={"settings", "extraction_seeds", "split_seeds", "finetune_seeds"})
        return {"settings": unit_settings, "model": identity, "dataset_file": sha256_file(dataset_file),
                "known_facts": sha256_file(self.known_facts) if self.known_facts else None,
                "templates_dir": str(self.templates_dir) if self.templates_dir else None,
                "template_variants": list(self.template_variants) if self.template_variants is not None else "all",
                "prompt_train_dir": str(self.prompt_train_dir) if self.prompt_train_dir else None}

    def _execute(self, loaded, accelerator, console) -> dict:
        from rich.progress import Progress

        templates = self._templates()
        extraction_seeds = 1 if (self.cfg.extraction == "discrete" or self.known_facts) else self.cfg.extraction_seeds
        runs: dict[str, list[dict]] = {s: [] for s in self.cfg.settings}
        extraction_log = []
        with Progress(console=console, transient=False, disable=not accelerator.is_main_process) as progress:
            for e in range(extraction_seeds):
                known = self._extraction_unit(loaded, e, progress, accelerator)
                acc_d = known["acc_D"]
                extraction_log.append({"seed": e, "acc_D": acc_d, "n_known": len(known["known_ids"]),
                                       "n_probed": known["n_probed"], "n_unreadable": len(known["unreadable_ids"]),
                                       "n_untrained": len(known["untrained_ids"])})
                facts = [self._triple(self.by_id[i]) for i in known["known_ids"]]
                for setting in self.cfg.settings:
                    for s in range(self.cfg.split_seeds):
                        for f in range(self.cfg.finetune_seeds):
                            unit = self._downstream_unit(loaded, facts, templates, setting, e, s, f, progress,
                                                         accelerator.is_main_process, known["n_probed"])
                            runs[setting].append({"extraction_seed": e, "split_seed": s, "finetune_seed": f,
                                                  **gap_figures(acc_d, unit["downstream_accuracy"]),
                                                  "chance_accuracy": unit["chance_accuracy"]})
        results = {
            "schema": RESULTS_SCHEMA, "task": "xteval", "model": self.model_name, "model_identity": loaded.identity,
            "dataset": str(self.dataset_dir), "dataset_split": self.cfg.dataset_split, "n_facts": len(self.rows),
            "extraction": {"method": "known-facts file" if self.known_facts else self.cfg.extraction,
                           "criterion": self._criterion(loaded.kind), "seeds": extraction_log,
                           "not_probed": "leave D (acc_D = n_known / n_probed): unreadable = a masked LM cannot "
                                         "read the tail at one mask; untrained = no soft-prompt train/dev facts "
                                         "for the relation"},
            "statistics": {"acc_D, gap1": "mean and sample std over the distinct extraction seeds (paper Fig. 4a)",
                           "downstream_accuracy, usable_knowledge, gap2, chance_accuracy":
                               "mean and sample std over the runs, extraction x split x fine-tune (paper Fig. 4b)"},
            "settings": {s: {**aggregate_setting(r), "runs": r} for s, r in runs.items()},
            "config": self.cfg.model_dump(),
        }
        if accelerator.is_main_process:
            from kbench.evaluate.rundir import validate_results
            from kbench.evaluate.xteval.report import write_report

            validate_results(results, "results.xteval.v1.json")
            write_json(self.out / "results.json", results)
            write_report(self.out, results)
        return results

    # ------------------------------------------------------------------ units
    def _extraction_unit(self, loaded, seed: int, progress, accelerator) -> dict:
        """D^theta of one extraction seed. Soft prompts train data parallel on every process; the
        discrete and known-facts paths run on the main process while the others wait for its file."""
        path = self.out / "extraction" / f"seed-{seed}.json"
        is_main = accelerator.is_main_process
        # Every process looks at the folder at the same moment: one that arrived late would see the
        # file the main process just wrote, skip the barrier below, and deadlock the next collective.
        accelerator.wait_for_everyone()
        if path.exists():
            return read_json(path)
        if self.cfg.extraction == "discrete" or self.known_facts is not None:
            unit = self._compute_extraction(loaded, seed, progress, is_main) if is_main else None
            accelerator.wait_for_everyone()
            return unit if unit is not None else read_json(path)
        return self._compute_extraction(loaded, seed, progress, is_main)

    def _compute_extraction(self, loaded, seed: int, progress, is_main: bool) -> dict:
        path = self.out / "extraction" / f"seed-{seed}.json"
        task = progress.add_task(f"extraction (seed {seed})", total=len(self.rows))
        advance = lambda n=1: progress.advance(task, n)  # noqa: E731
        if self.known_facts is not None:
            extraction = Extraction(read_known_facts(self.known_facts, set(self.by_id)), [])
        elif self.cfg.extraction == "discrete":
            extraction = discrete_known(loaded, self.rows, self.cfg.top1, self.cfg.probe_batch_size, advance)
        else:
            pairs = split_dir_pairs(self.prompt_train_dir) if self.prompt_train_dir else self._dataset_pairs()
            extraction = soft_known(loaded, self.rows, pairs, self.out / "softprompts" / f"seed-{seed}",
                                    self.cfg.softprompt, seed, self.cfg.top1, self.cfg.probe_batch_size, advance,
                                    write=is_main)
        n_probed = len(self.rows) - len(extraction.unreadable) - len(extraction.untrained)
        if n_probed == 0:
            raise UserError(f"none of the {len(self.rows)} facts can be probed: {len(extraction.unreadable)} have "
                            f"tails a masked LM cannot read at one mask, {len(extraction.untrained)} belong to "
                            "relations without soft-prompt train/dev facts")
        unit = {"seed": seed, "n_facts": len(self.rows), "n_probed": n_probed, "known_ids": sorted(extraction.known),
                "unreadable_ids": sorted(extraction.unreadable), "untrained_ids": sorted(extraction.untrained),
                "acc_D": len(extraction.known) / n_probed}
        if is_main:
            write_json(path, unit)
        return unit

    def _downstream_unit(self, loaded, facts: list[Triple], templates, setting: str, e: int, s: int, f: int,
                         progress, is_main: bool, n_probed: int) -> dict:
        path = self.out / "units" / setting / f"e{e}-s{s}-f{f}.json"
        if path.exists():
            return read_json(path)
        if len(facts) < 3:
            raise UserError(f"D^theta holds {len(facts)} fact(s) (acc_D = {len(facts) / n_probed:.3f}); the "
                            "downstream task needs at least 3: use more facts (--limit) or another model")
        train, test = split_facts(facts, setting, s, self.cfg.train_fraction)
        if not test:
            raise UserError(f"the {setting} split left no test facts; use more facts (--limit)")
        train_generator, test_generator = downstream_generators(setting, facts, train, templates)
        ft = self.cfg.finetune
        steps = -(-max(1, len(train) - max(1, round(len(train) * ft.validation_fraction))) // ft.batch_size) * ft.epochs
        task = progress.add_task(f"{setting} fine-tune e{e} s{s} f{f}", total=steps)
        seed = int(stable_hash([e, s, f])[:8], 16)
        encoder, log = finetune(loaded, train, train_generator, ft, seed, lambda: progress.advance(task))
        test_task = progress.add_task(f"{setting} retrieval e{e} s{s} f{f}", total=len(test))
        rows = evaluate_retrieval(encoder, test, test_generator, self.cfg.distractors_per_type, seed, ft,
                                  lambda: progress.advance(test_task))
        unit = {"setting": setting, "extraction_seed": e, "split_seed": s, "finetune_seed": f,
                "n_train": len(train), "n_test": len(test), **log,
                "downstream_accuracy": sum(r["correct"] for r in rows) / len(rows),
                "chance_accuracy": sum(1 / r["n_candidates"] for r in rows) / len(rows), "queries": rows}
        if is_main:
            write_json(path, unit)
        del encoder
        return unit

    # ------------------------------------------------------------------ helpers
    def _criterion(self, kind: str) -> str:
        """What "the model predicts the tail at top-1" meant in this run (stated in results.json)."""
        if self.known_facts is not None:
            return f"known facts from {self.known_facts}"
        sp = self.cfg.softprompt
        prompts = (f"soft prompts (OptiPrompt, {sp.n_before} + {sp.n_after} vectors around the head)"
                   if self.cfg.extraction == "soft" else "discrete prompts (the dataset's cloze prompt)")
        if kind == "masked":
            return f"{prompts}: the single-token tail is the argmax at the mask"
        if self.cfg.top1 == "first-token":
            return f"{prompts}: the tail's first token is the argmax (first-token rank 1)"
        return f"{prompts}: every token of the tail is the argmax, teacher-forced (greedy writes the tail)"

    def _dataset_pairs(self):
        """Soft-prompt data from the dataset's own train and dev splits (facts outside D)."""
        import polars as pl

        tables = {}
        for split in ("train", "dev"):
            files = sorted(self.dataset_dir.glob(f"data/*/{split}.parquet"))
            if not files:
                raise UserError(f"{self.dataset_dir} has no {split} split for soft-prompt training; "
                                "pass --prompt-train-dir DIR (<relation>/train.jsonl, dev.jsonl)")
            tables[split] = pl.read_parquet(files[0], columns=["relation", "subject", "object"])

        def pairs(relation: str) -> tuple[list, list]:
            return tuple([(r["subject"], r["object"]) for r in tables[split].filter(pl.col("relation") == relation).to_dicts()]
                         for split in ("train", "dev"))

        return pairs

    @staticmethod
    def _triple(row: dict) -> Triple:
        return Triple(str(row["subject"]), str(row["relation"]), str(row["object"]))

    def _templates(self) -> dict[str, list[str]]:
        own: dict[str, list[str]] = defaultdict(list)
        for r in self.rows:
            if r.get("template") and r["template"] not in own[r["relation"]]:
                own[r["relation"]].append(r["template"])
        if self.templates_dir is None:
            return dict(own)
        return load_templates(self.templates_dir, own, self.template_variants)
