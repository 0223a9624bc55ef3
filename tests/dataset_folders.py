"""Small dataset folders for tests, built the way users build them (`kbench build` recipes) or
written inline with every column the record schema requires."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from tests.conftest import REPO_ROOT
from tests.question_rows import question_row

#: LAMA T-REx at test size: the packaged recipe over two relations, 40 facts each (`load_recipe(SMALL_LAMA_RECIPE,
#: SMALL_LAMA_OVERRIDES)`), and the same as `kbench build` arguments (`run_kbench("build", *SMALL_LAMA_BUILD, "--out", DIR)`).
SMALL_LAMA_RECIPE = REPO_ROOT / "pipelines" / "lama-trex.toml"
SMALL_LAMA_OVERRIDES = ['load.relations=["P19","P20"]', "load.max_per_relation=40"]
SMALL_LAMA_BUILD = [str(SMALL_LAMA_RECIPE), *(arg for o in SMALL_LAMA_OVERRIDES for arg in ("--set", o))]

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
