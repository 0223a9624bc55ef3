"""The snapshot diff (Unchanged / New / Outdated-Updated) on inline data, and the demo derivation."""

from __future__ import annotations

import json

import polars as pl
import pytest

from kbench.construct.recipe import load_recipe
from kbench.construct.runner import run_recipe
from kbench.errors import InputError
from kbench.sources.snapshots import derive_lama_snapshots, diff_snapshots, read_snapshot

OLD = [
    {"subject": "Ada", "subject_id": "Q1", "relation": "P108", "object": "Acme", "object_id": "Q10"},
    {"subject": "Bob", "subject_id": "Q2", "relation": "P108", "object": "Globex", "object_id": "Q11"},
    {"subject": "Cy", "subject_id": "Q3", "relation": "P27", "object": "France", "object_id": "Q142"},
    {"subject": "Dee", "subject_id": "Q4", "relation": "P27", "object": "Spain", "object_id": "Q29"},
]
NEW = [
    {"subject": "Ada", "subject_id": "Q1", "relation": "P108", "object": "ACME Corp", "object_id": "Q10"},  # same id: unchanged
    {"subject": "Bob", "subject_id": "Q2", "relation": "P108", "object": "Initech", "object_id": "Q12"},  # edited
    {"subject": "Cy", "subject_id": "Q3", "relation": "P27", "object": "France", "object_id": "Q142"},
    {"subject": "Cy", "subject_id": "Q3", "relation": "P27", "object": "Italy", "object_id": "Q38"},  # two objects
    {"subject": "Eve", "subject_id": "Q5", "relation": "P27", "object": "Peru", "object_id": "Q419"},  # new
]                                                                                                       # Dee removed


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_diff_classifies_every_key():
    items, rejected = diff_snapshots(OLD, NEW)
    by_subject = {i["subject"]: i for i in items}
    assert by_subject["Ada"]["category"] == "unchanged"
    assert (by_subject["Bob"]["category"], by_subject["Bob"]["answer1"], by_subject["Bob"]["answer2"]) == ("edited", "Globex", "Initech")
    assert (by_subject["Eve"]["category"], by_subject["Eve"]["answer1"]) == ("new", None)
    assert {(r["subject"], r["reason"]) for r in rejected} == {("Cy", "multiple_objects"), ("Dee", "removed_in_new_snapshot")}
    # without ids, objects are compared by label, case-insensitively
    items, _ = diff_snapshots([{"subject": "A", "relation": "P1", "object": "Paris"}],
                              [{"subject": "A", "relation": "P1", "object": "paris "}])
    assert items[0]["category"] == "unchanged"


def test_read_snapshot_tsv_and_errors(tmp_path):
    tsv = tmp_path / "s.tsv"
    tsv.write_text("subject\tsubject_id\trelation\tobject\tobject_id\nAda\tQ1\tP108\tAcme\tQ10\nBob\t\tP108\tGlobex\t\n")
    facts = read_snapshot(tsv)
    assert facts[1] == {"subject": "Bob", "subject_id": None, "relation": "P108", "object": "Globex", "object_id": None}
    bad = tmp_path / "bad.tsv"
    bad.write_text("subject\trelation\nAda\tP108\n")
    with pytest.raises(InputError, match="object"):
        read_snapshot(bad)
    empty_object = _write_jsonl(tmp_path / "e.jsonl", [OLD[0], {"subject": "X", "relation": "P1", "object": ""}])
    with pytest.raises(InputError, match=r"e.jsonl:2"):
        read_snapshot(empty_object)


def test_stage_on_snapshot_files(tmp_path):
    old, new = _write_jsonl(tmp_path / "old.jsonl", OLD), _write_jsonl(tmp_path / "new.jsonl", NEW)
    recipe = tmp_path / "evo.toml"
    recipe.write_text(
        '[pipeline]\nname = "evo"\nconfig = "evolving"\n\n'
        f'[[stages]]\nstage = "evolving_snapshots"\nold = "{old}"\nnew = "{new}"\nold_date = "2023"\nnew_date = "2024"\n\n'
        '[[stages]]\nstage = "write_dataset"\nschema_name = "qa_item.v1.json"\n'
    )
    run = tmp_path / "run"
    result = run_recipe(load_recipe(recipe), run)
    assert result.stages[0].dropped == {"multiple_objects": 1, "removed_in_new_snapshot": 1}
    edited = pl.read_parquet(run / "data" / "evolving" / "edited.parquet").row(0, named=True)
    assert edited["question"] == "Who is the employer of Bob?"
    assert (edited["answer1"], edited["answer2"], edited["new_date"]) == ("Globex", "Initech", "2024")
    corpus = [json.loads(line) for line in (run / "corpus" / "new_snapshot.jsonl").read_text().splitlines()]
    assert {c["change"] for c in corpus} == {"unchanged", "updated", "new"}
    with pytest.raises(InputError, match="either"):
        bad = tmp_path / "bad.toml"
        bad.write_text('[pipeline]\nname = "evo"\n\n[[stages]]\nstage = "evolving_snapshots"\n'
                       f'old = "{old}"\n')
        load_recipe(bad)


def test_derived_demo_snapshots_are_deterministic_real_facts(shared_data):
    args = (shared_data / "lama_trex" / "TREx", shared_data / "lama_trex_autoprompt_splits", ["P108", "P27"], 20, 0.25, 5)
    old, new = derive_lama_snapshots(*args, seed=3)
    assert (old, new) == derive_lama_snapshots(*args, seed=3)
    assert len(old) == 40 and len(new) == 50
    items, rejected = diff_snapshots(old, new)
    counts = {c: sum(i["category"] == c for i in items) for c in ("unchanged", "new", "edited")}
    assert counts == {"unchanged": 30, "new": 10, "edited": 10} and not rejected
    assert all(i.get("synthetic_edit") for i in items if i["category"] == "edited")
    assert all(i["answer1"] != i["answer2"] for i in items if i["category"] == "edited")
    other_seed = derive_lama_snapshots(*args, seed=4)[1]
    assert other_seed != new
