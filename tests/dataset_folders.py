"""Small dataset folders for tests, built the way users build them (`kbench build` recipes) or
written inline with every column the record schema requires.

tests/conftest.py registers this module as a plugin: a test asks for `facts`, its module's FACTS as a
question dataset.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import REPO_ROOT
from tests.question_rows import question_row

#: LAMA T-REx at test size: the packaged recipe over two relations, 40 facts each (`load_recipe(SMALL_LAMA_RECIPE,
#: SMALL_LAMA_OVERRIDES)`), and the same as `kbench build` arguments (`run_kbench("build", *SMALL_LAMA_BUILD, "--out", DIR)`).
SMALL_LAMA_RECIPE = REPO_ROOT / "pipelines" / "lama-trex.toml"
SMALL_LAMA_OVERRIDES = ['load.relations=["P19","P20"]', "load.max_per_relation=40"]
SMALL_LAMA_BUILD = [str(SMALL_LAMA_RECIPE), *(arg for o in SMALL_LAMA_OVERRIDES for arg in ("--set", o))]

#: Well-known (relation, subject, object) facts, keyed by subject; each test module picks its own FACTS
#: with `facts_about` (how many, and which, is part of what the module measures).
KNOWN_FACTS = {fact[1]: fact for fact in [
    ("P36", "France", "Paris"), ("P36", "Germany", "Berlin"), ("P36", "Italy", "Rome"), ("P36", "Spain", "Madrid"),
    ("P36", "Japan", "Tokyo"), ("P19", "Dante", "Florence"), ("P19", "Marie Curie", "Warsaw"),
    ("P19", "Albert Einstein", "Ulm"), ("P19", "Mozart", "Salzburg"), ("P19", "Picasso", "Malaga"), ("P495", "Toyota", "Japan"),
    ("P495", "Nokia", "Finland"), ("P495", "Sony", "Japan")]}
#: The handful most tests ask about.
FACTS = [KNOWN_FACTS[s] for s in ("France", "Germany", "Dante", "Marie Curie", "Toyota")]


def facts_about(*subjects: str) -> list[tuple[str, str, str]]:
    return [KNOWN_FACTS[s] for s in subjects]


def fact_rows(facts: list[tuple[str, str, str]]) -> list[dict]:
    """One question row per (relation, subject, object), ids q0, q1, ..., the cloze "<subject> is in"."""
    return [{"id": f"q{i}", "relation": r, "subject": s, "object": o, "answers": [o], "prompt_cloze": f"{s} is in"}
            for i, (r, s, o) in enumerate(facts)]


@pytest.fixture(scope="module")
def facts(request, tmp_path_factory) -> Path:
    """The test module's FACTS (else the shared FACTS) as a question dataset folder, written once per module."""
    return question_dataset(tmp_path_factory.mktemp("facts"), fact_rows(getattr(request.module, "FACTS", FACTS)))


SNAPSHOT_OLD = [{"subject": s, "subject_id": f"Q{i + 1}", "relation": "P108", "object": o, "object_id": f"Q{100 + i}"}
                for i, (s, o) in enumerate([("Ada", "Acme"), ("Bob", "Globex"), ("Cy", "Initech"), ("Dee", "Hooli")])]
SNAPSHOT_NEW = SNAPSHOT_OLD[:2] + [
    {**SNAPSHOT_OLD[2], "object": "Paris", "object_id": "Q90"}, {**SNAPSHOT_OLD[3], "object": "Berlin", "object_id": "Q64"},
    {"subject": "Eve", "subject_id": "Q9", "relation": "P108", "object": "Umbrella", "object_id": "Q200"}]


def _build(recipe: Path, out: Path) -> Path:
    from kbench.construct.recipe import load_recipe
    from kbench.construct.runner import run_recipe

    run_recipe(load_recipe(recipe), out)
    return out


def question_dataset(root: Path, rows: list[dict], split: str = "test") -> Path:
    (root / "data" / "default").mkdir(parents=True, exist_ok=True)
    pl.DataFrame([question_row(**r) for r in rows]).write_parquet(root / "data" / "default" / f"{split}.parquet")
    return root


def left_dataset(shared_data: Path, root: Path) -> Path:
    """LEFT statements from one real OpenStax book (../shared/data)."""
    root.mkdir(parents=True, exist_ok=True)
    recipe = root / "left.toml"
    recipe.write_text(
        f'[pipeline]\nname = "left"\nseed = 13\nconfig = "statements"\n\n'
        f'[[stages]]\nstage = "load_textbook"\nbooks = [{json.dumps(str(shared_data / "openstax_us_history"))}]\n\n'
        f'[[stages]]\nstage = "textbook_statements"\n\n'
        f'[[stages]]\nstage = "write_dataset"\nschema_name = "statement.v1.json"\n')
    return _build(recipe, root / "run")


def evolving_dataset(root: Path) -> Path:
    """EvolvingQA items from two inline fact snapshots."""
    root.mkdir(parents=True, exist_ok=True)
    for name, rows in (("old", SNAPSHOT_OLD), ("new", SNAPSHOT_NEW)):
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = root / "evo.toml"
    recipe.write_text('[pipeline]\nname = "evo"\nconfig = "evolving"\n\n'
                      f'[[stages]]\nstage = "evolving_snapshots"\nold = "{root / "old.jsonl"}"\nnew = "{root / "new.jsonl"}"\n\n'
                      '[[stages]]\nstage = "write_dataset"\nschema_name = "qa_item.v1.json"\n')
    return _build(recipe, root / "run")
