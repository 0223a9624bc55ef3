"""Source stage `evolving_snapshots`: EvolvingQA-style items from two dated snapshots of facts.

Two modes (exactly one):
  * `old` + `new`: two snapshot files (JSONL or TSV, see `kbench/sources/snapshots.py`);
  * `[stages.derive]`: a demo pair derived deterministically from LAMA T-REx + the AutoPrompt
    train split -- **synthetic edits of real facts** (see `derive_lama_snapshots`). The derived
    snapshots are written to `snapshots/old.jsonl` and `snapshots/new.jsonl` in the run directory,
    so they can be inspected and fed back through the file mode.

Output, one row per (subject, relation) key of the new snapshot:

    id, relation, relation_label, subject, subject_id, question, answer (the new snapshot's object),
    answer1 (old object; null for `new`), answer2 (new object), object_id, old_object_id,
    category / split ("unchanged" | "new" | "edited"), synthetic_edit, old_date, new_date

An `edited` item is scored twice by `kbench evaluate qa`: Outdated against `answer1`, Updated
against `answer2`. Questions come from the relation's question template
(`kbench/construct/question_templates.json`, else "What is the <relation label> of <subject>?").
Drops: `multiple_objects`, `removed_in_new_snapshot`.

Side output: `corpus/new_snapshot.jsonl`, one sentence per fact of the new snapshot (the LAMA
cloze template filled with subject and object) with `change` = unchanged | new | updated: the text
`kbench read` learns the update from (`--only change=updated` reads only the changed facts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, model_validator

from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage
from kbench.errors import InputError
from kbench.io import iter_jsonl, stable_hash, write_jsonl

CORPUS_FILE = "corpus/new_snapshot.jsonl"
DEFAULT_RELATIONS = ["P108", "P127", "P159", "P264", "P27", "P937"]  # employer, owner, HQ, label, citizenship, work place


class DeriveParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    trex: str
    autoprompt: str
    relations: list[str] = DEFAULT_RELATIONS
    per_relation: int = 40
    edit_fraction: float = 0.25
    new_per_relation: int = 10


@register_stage
class EvolvingSnapshots(Stage):
    name = "evolving_snapshots"
    source = True

    class Params(StageParams):
        old: Optional[str] = None
        new: Optional[str] = None
        derive: Optional[DeriveParams] = None
        relations_file: Optional[str] = None  # LAMA relations.jsonl: labels and cloze templates
        old_date: str = ""
        new_date: str = ""

        @model_validator(mode="after")
        def _one_mode(self):
            if (self.derive is None) == (self.old is None or self.new is None) or (self.derive and (self.old or self.new)):
                raise ValueError("give either `old` and `new` snapshot files, or a `derive` table, not both")
            return self

    def input_files(self) -> list[Path]:
        p = self.params
        files = [self.ctx.resolve(p.relations_file)] if p.relations_file else []
        if p.derive is None:
            return files + [self.ctx.resolve(p.old), self.ctx.resolve(p.new)]
        trex, autoprompt = self.ctx.resolve(p.derive.trex), self.ctx.resolve(p.derive.autoprompt)
        return files + [f for r in p.derive.relations for f in (trex / f"{r}.jsonl", autoprompt / r / "train.jsonl")]

    def _relations(self) -> dict[str, dict]:
        if not self.params.relations_file:
            return {}
        path = self.ctx.resolve(self.params.relations_file)
        return {row["relation"]: row for _, row in iter_jsonl(path, ("relation",))}

    def deviations(self, details: dict) -> list:
        from kbench.protocol import Deviation

        found = [
            Deviation(
                id="snapshots-as-fact-tables",
                paper="EvolvingQA's questions come from the text of two dated Wikipedia snapshots",
                kbench="two snapshots of a (subject, relation, object) fact table; one question per (subject, relation), "
                "from the relation's question template",
                effect="which facts are asked about and the wording of every item",
            )
        ]
        if self.params.derive is not None:
            d = self.params.derive
            found.append(
                Deviation(
                    id="synthetic-snapshot-edits",
                    paper="EvolvingQA compares two real snapshots of the knowledge source",
                    kbench=f"both snapshots derived from LAMA T-REx facts: {d.edit_fraction:g} of the objects replaced by "
                    f"another object of the same relation (synthetic edits, plausible but not true), plus "
                    f"{d.new_per_relation} AutoPrompt facts per relation as new facts",
                    effect="the Outdated / Updated (edited) and New items: their answers are not real changes",
                )
            )
        return found

    def run(self, table) -> StageOutput:
        import polars as pl

        from kbench.construct.stages.to_questions import load_question_templates
        from kbench.sources.snapshots import derive_lama_snapshots, diff_snapshots, read_snapshot

        p = self.params
        if p.derive is None:
            old, new = read_snapshot(self.ctx.resolve(p.old)), read_snapshot(self.ctx.resolve(p.new))
        else:
            d = p.derive
            old, new = derive_lama_snapshots(
                self.ctx.resolve(d.trex),
                self.ctx.resolve(d.autoprompt),
                d.relations,
                d.per_relation,
                d.edit_fraction,
                d.new_per_relation,
                self.ctx.seed,
            )
            write_jsonl(self.ctx.output_path("snapshots/old.jsonl"), old)
            write_jsonl(self.ctx.output_path("snapshots/new.jsonl"), new)
        items, rejected = diff_snapshots(old, new)
        relations, questions = self._relations(), load_question_templates()
        rows, corpus = [], []
        for item in items:
            info = relations.get(item["relation"], {})
            label = info.get("label") or item["relation"]
            template = questions.get(item["relation"]) or f"What is the {label} of [X]?"
            rows.append(
                {
                    "id": stable_hash([item.get("subject_id") or item["subject"], item["relation"]])[:16],
                    "relation": item["relation"],
                    "relation_label": label,
                    "subject": item["subject"],
                    "subject_id": item.get("subject_id"),
                    "question": template.replace("[X]", item["subject"]),
                    "answer": item["object"],
                    "answer1": item["answer1"],
                    "answer2": item["answer2"],
                    "object_id": item.get("object_id"),
                    "old_object_id": item["old_object_id"],
                    "category": item["category"],
                    "split": item["category"],
                    "synthetic_edit": bool(item.get("synthetic_edit", False)),
                    "old_date": p.old_date,
                    "new_date": p.new_date,
                }
            )
            cloze = info.get("template") or f"[X] {label} [Y] ."
            if "[X]" not in cloze or "[Y]" not in cloze:
                raise InputError(self.ctx.resolve(p.relations_file), f"template of {item['relation']} lacks [X] or [Y]")
            change = {"edited": "updated"}.get(item["category"], item["category"])
            corpus.append(
                {
                    "text": cloze.replace("[X]", item["subject"]).replace("[Y]", item["object"]).replace(" .", "."),
                    "change": change,
                    "relation": item["relation"],
                }
            )
        write_jsonl(self.ctx.output_path(CORPUS_FILE), corpus)
        rejected_frame = None
        if rejected:
            rejected_frame = pl.DataFrame(
                [
                    {**{k: r.get(k) for k in ("subject", "subject_id", "relation", "object", "object_id")}, "reason": r["reason"]}
                    for r in rejected
                ],
                schema={
                    "subject": pl.String,
                    "subject_id": pl.String,
                    "relation": pl.String,
                    "object": pl.String,
                    "object_id": pl.String,
                    "reason": pl.String,
                },
            )
        return StageOutput(kept=pl.DataFrame(rows, schema=_SCHEMA(pl)), rejected=rejected_frame)


def _SCHEMA(pl):
    text = pl.String
    return {
        "id": text,
        "relation": text,
        "relation_label": text,
        "subject": text,
        "subject_id": text,
        "question": text,
        "answer": text,
        "answer1": text,
        "answer2": text,
        "object_id": text,
        "old_object_id": text,
        "category": text,
        "split": text,
        "synthetic_edit": pl.Boolean,
        "old_date": text,
        "new_date": text,
    }
