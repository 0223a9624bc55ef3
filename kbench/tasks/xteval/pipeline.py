"""XTEVAL's settings and the pure pieces of its pipeline: facts D, the IID / OOD splits and the
document generators. The task itself (units, journal, results) is `kbench.tasks.xteval.task`.

Extraction (`extraction.py`, `kbench.models.training.probes`): soft prompts (the paper's) or the dataset's discrete
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
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from kbench.errors import UserError
from kbench.evaluate.task import TaskSettings
from kbench.tasks.xteval.documents import DocumentGenerator, Triple
from kbench.tasks.xteval.training.crossencoder import FinetuneConfig
from kbench.tasks.xteval.training.softprompt import SoftPromptConfig

SEED_COUNTS = ("extraction_seeds", "split_seeds", "finetune_seeds")


class XtevalSettings(TaskSettings):
    extraction: Literal["discrete", "soft"] = Field(
        "soft", description="soft: OptiPrompt vectors (the paper's); discrete: the dataset's cloze prompts."
    )
    top1: Literal["first-token", "full-answer"] = Field(
        "first-token", description="Known = top-1: the first gold token, or every one, is the argmax (masked LMs: the mask)."
    )
    setting: Literal["iid", "ood", "both"] = Field("iid", description="iid: random 60/40 of D; ood: relation-disjoint 60/40.")
    extraction_seeds: int = Field(3, ge=1, description="Extraction seeds (paper: 3).")
    split_seeds: int = Field(3, ge=1, description="Train/test split seeds (paper: 3).")
    finetune_seeds: int = Field(3, ge=1, description="Fine-tuning seeds (paper: 3).")
    train_fraction: float = Field(0.6, gt=0, lt=1, description="Share of D^theta the retriever trains on (paper: 0.6).")
    distractors_per_type: int = Field(50, ge=1, description="Test distractors per document type (paper: 50).")
    probe_batch_size: int = Field(32, ge=1, description="Facts per extraction forward pass (memory bound only).")
    finetune: FinetuneConfig = FinetuneConfig()
    softprompt: SoftPromptConfig = SoftPromptConfig()
    known_facts: str | None = Field(
        None, description="D^theta from an extraction run (parquet/jsonl: id[, correct]) instead of step 1."
    )
    prompt_train_dir: str | None = Field(
        None, description="Soft-prompt data: <relation>/train.jsonl and dev.jsonl; default: the dataset's train/dev splits."
    )
    templates_dir: str | None = Field(
        None, description="A LAMA folder (relations.jsonl, prompt_variants/) adding document templates."
    )
    template_variants: tuple[str, ...] = Field(
        ("LPAQA",), description="With --templates-dir: paraphrase files prompt_variants/<NAME>_relations.jsonl to add, or all."
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthands(cls, given: Any) -> Any:
        """`seeds=N` sets every seed count not given (paper: 3 -> 27 runs); the fine-tuning epochs
        are the soft-prompt epochs too unless those are given. Here, so the API and the CLI agree."""
        if not isinstance(given, dict):
            return given
        given = dict(given)
        seeds = given.pop("seeds", None)
        if seeds is not None:
            given = {name: seeds for name in SEED_COUNTS} | {k: v for k, v in given.items() if v is not None}
        finetune, softprompt = (_given(given.get(part)) for part in ("finetune", "softprompt"))
        if finetune.get("epochs") is not None and softprompt.get("epochs") is None:
            given["softprompt"] = softprompt | {"epochs": finetune["epochs"]}
        return given

    @property
    def settings(self) -> list[str]:
        return ["iid", "ood"] if self.setting == "both" else [self.setting]


def _given(part: Any) -> dict:
    """The values given for a nested config: a dict, or a config object's explicitly set fields."""
    if isinstance(part, BaseModel):
        return part.model_dump(exclude_unset=True)
    return {k: v for k, v in (part or {}).items() if v is not None} if isinstance(part, dict) else {}


def load_facts(dataset_dir: Path, split: str, limit: int | None, seed: int = 0, config: str | None = None) -> list[dict]:
    """The facts D: the rows the extraction task reads for the same split, --limit and --seed (its
    seeded sample), so `evaluate extraction` and `evaluate xteval` see the same D."""
    from kbench.dataset import open_split, seeded_sample

    return seeded_sample(open_split(Path(dataset_dir), split, config).rows, limit, seed)


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


def downstream_generators(
    setting: str, facts: list[Triple], train: list[Triple], templates: dict[str, list[str]]
) -> tuple[DocumentGenerator, DocumentGenerator]:
    """(training generator, test generator). IID training samples its free slots from all of
    D^theta, as the paper's P(d | H, R, T) does; OOD training sees only the train relations'
    facts and templates, or a held-out relation would leak into training through the (h,.,t)
    negatives (its template) and the entity pools. The test side draws from all of D^theta."""
    pool = facts if setting == "iid" else train
    relations = {f.relation for f in pool}
    train_generator = DocumentGenerator(pool, {r: ts for r, ts in templates.items() if r in relations})
    return train_generator, DocumentGenerator(facts, templates)
