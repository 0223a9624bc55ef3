"""Dated snapshots of a fact table: reading them, deriving a demo pair from LAMA, diffing them.

A snapshot is a Wikidata-shaped fact table, one fact per row, as JSONL (one object per line) or
TSV (a header line, tab-separated). Fields: `subject`, `relation`, `object` (required),
`subject_id`, `object_id` (Wikidata ids, optional but preferred: facts are matched on
(subject_id or subject, relation) and objects compared by object_id when both sides have one).

`diff_snapshots(old, new)` classifies every (subject, relation) key, as EvolvingQA does:
  * `unchanged`: same object in both;
  * `new`: the key exists only in the new snapshot;
  * `edited`: the object changed; `answer1` = old object (Outdated), `answer2` = new (Updated).
Keys that only the old snapshot has (`removed_in_new_snapshot`) and keys with several objects in
one snapshot (`multiple_objects`: no single answer) are returned as rejected rows with the reason.

`derive_lama_snapshots(...)` builds a demo pair deterministically from real LAMA data: the old
snapshot is the first `per_relation` T-REx facts per relation (by uuid, one per subject); the new
one replaces a seeded `edit_fraction` of their objects by another object seen with the same
relation in T-REx (**synthetic edits of real facts**: the new object is plausible, not true),
and adds `new_per_relation` real facts from the AutoPrompt train split whose subjects the old
snapshot lacks.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from kbench.errors import InputError
from kbench.io import iter_jsonl, stable_hash

REQUIRED = ("subject", "relation", "object")
FACT_FIELDS = ("subject", "subject_id", "relation", "object", "object_id")


def read_snapshot(path: Path) -> list[dict]:
    """Facts of one snapshot file (.jsonl or .tsv); errors name the file and line."""
    path = Path(path)
    if path.suffix == ".tsv":
        if not path.is_file():
            raise InputError(path, "file not found")
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh, delimiter="\t")
            missing = [f for f in REQUIRED if f not in (reader.fieldnames or [])]
            if missing:
                raise InputError(path, f"header lacks column(s) {', '.join(missing)}", line=1)
            rows = [(i, row) for i, row in enumerate(reader, start=2)]
    else:
        rows = list(iter_jsonl(path, REQUIRED))
    facts = []
    for lineno, row in rows:
        fact = {f: (str(row[f]).strip() if row.get(f) not in (None, "") else None) for f in FACT_FIELDS}
        for f in REQUIRED:
            if not fact[f]:
                raise InputError(path, f"empty `{f}`", line=lineno)
        facts.append(fact)
    if not facts:
        raise InputError(path, "the snapshot has no facts")
    return facts


def fact_key(fact: dict) -> tuple[str, str]:
    return (fact.get("subject_id") or fact["subject"], fact["relation"])


def same_object(a: dict, b: dict) -> bool:
    if a.get("object_id") and b.get("object_id"):
        return a["object_id"] == b["object_id"]
    return a["object"].strip().casefold() == b["object"].strip().casefold()


def _grouped(facts: list[dict]) -> dict[tuple[str, str], list[dict]]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for fact in facts:
        group = groups.setdefault(fact_key(fact), [])
        if not any(same_object(fact, other) for other in group):
            group.append(fact)
    return groups


def diff_snapshots(old: list[dict], new: list[dict]) -> tuple[list[dict], list[dict]]:
    """(items, rejected): items carry category, answer1, answer2 and the new fact's fields."""
    old_groups, new_groups = _grouped(old), _grouped(new)
    items, rejected = [], []
    for key in sorted(set(old_groups) | set(new_groups)):
        before, after = old_groups.get(key, []), new_groups.get(key, [])
        if len(before) > 1 or len(after) > 1:
            rejected.append({**(after or before)[0], "reason": "multiple_objects"})
        elif not after:
            rejected.append({**before[0], "reason": "removed_in_new_snapshot"})
        elif not before:
            items.append({**after[0], "category": "new", "answer1": None, "answer2": after[0]["object"], "old_object_id": None})
        else:
            category = "unchanged" if same_object(before[0], after[0]) else "edited"
            items.append(
                {
                    **after[0],
                    "category": category,
                    "answer1": before[0]["object"],
                    "answer2": after[0]["object"],
                    "old_object_id": before[0].get("object_id"),
                }
            )
    return items, rejected


def _lama_fact(row: dict, relation: str) -> dict:
    return {
        "subject": row["sub_label"],
        "subject_id": row.get("sub_uri"),
        "relation": relation,
        "object": row["obj_label"],
        "object_id": row.get("obj_uri"),
    }


def derive_lama_snapshots(
    trex_dir: Path,
    autoprompt_dir: Path,
    relations: list[str],
    per_relation: int,
    edit_fraction: float,
    new_per_relation: int,
    seed: int,
) -> tuple[list[dict], list[dict]]:
    """(old, new) snapshots; edited facts in `new` carry `synthetic_edit: True`."""
    old_all, new_all = [], []
    for relation in relations:
        trex = [row for _, row in iter_jsonl(Path(trex_dir) / f"{relation}.jsonl", ("sub_label", "obj_label", "uuid"))]
        trex.sort(key=lambda r: r["uuid"])
        old, subjects = [], set()
        for row in trex:
            fact = _lama_fact(row, relation)
            if fact_key(fact) not in subjects:
                subjects.add(fact_key(fact))
                old.append(fact)
            if len(old) >= per_relation:
                break
        objects = sorted({(r.get("obj_uri") or r["obj_label"], r["obj_label"]) for r in trex})
        rng = random.Random(int(stable_hash([seed, relation])[:16], 16))
        edited_positions = set(rng.sample(range(len(old)), round(edit_fraction * len(old))))
        new = []
        for i, fact in enumerate(old):
            if i in edited_positions:
                choices = [o for o in objects if o[0] != (fact["object_id"] or fact["object"]) and o[1] != fact["object"]]
                if choices:
                    object_id, label = rng.choice(choices)
                    new.append(
                        {**fact, "object": label, "object_id": object_id if object_id != label else None, "synthetic_edit": True}
                    )
                    continue
            new.append(dict(fact))
        train = Path(autoprompt_dir) / relation / "train.jsonl"
        added = 0
        for _, row in sorted(iter_jsonl(train, ("sub_label", "obj_label")), key=lambda x: json.dumps(x[1], sort_keys=True)):
            if added >= new_per_relation:
                break
            fact = _lama_fact(row, relation)
            if fact_key(fact) not in subjects:
                subjects.add(fact_key(fact))
                new.append(fact)
                added += 1
        old_all += old
        new_all += new
    return old_all, new_all
