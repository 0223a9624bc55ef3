"""A small built dataset folder, laid out exactly as `kbench build` writes one, from real LAMA rows.

Used by the card, publish and report tests until they can build through a real recipe. The
manifest and stats have the keys `kbench.construct.runner` writes. tests/conftest.py registers
this module as a plugin: a test asks for the `lama_dir` fixture by name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbench.io import write_json, write_parquet

RELATIONS = {"P19": ("place of birth", "[X] was born in [Y] ."), "P20": ("place of death", "[X] died in [Y] .")}


def lama_rows(shared_data: Path, per_relation: int = 12) -> list[dict]:
    rows = []
    for rel, (label, template) in RELATIONS.items():
        with open(shared_data / "lama_trex" / "TREx" / f"{rel}.jsonl", encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if i == per_relation:
                    break
                fact = json.loads(line)
                cloze = template.replace("[X]", fact["sub_label"])
                rows.append({
                    "id": fact["uuid"], "relation": rel, "relation_label": label, "template": template,
                    "subject": fact["sub_label"], "subject_id": fact["sub_uri"], "object": fact["obj_label"],
                    "object_id": fact["obj_uri"], "answers": [fact["obj_label"]],
                    "prompt_cloze": cloze.split("[Y]")[0].rstrip(), "prompt_masked": cloze.replace("[Y]", "[MASK]"),
                    "question": f"{label} of {fact['sub_label']}?",
                    "frequency_bin": ("head", "torso", "tail")[i % 3], "split": "test",
                })
    return rows


def make_lama_folder(root: Path, shared_data: Path, *, with_files: bool = False) -> Path:
    import polars as pl

    rows = lama_rows(shared_data)
    frame = pl.DataFrame(rows)
    write_parquet(root / "data" / "default" / "test.parquet", frame.filter(pl.col("frequency_bin") != "torso"))
    write_parquet(root / "data" / "default" / "dev.parquet", frame.filter(pl.col("frequency_bin") == "torso"))
    write_parquet(root / "rejected" / "frequency_bin.parquet",
                  frame.head(3).with_columns(pl.lit("buffer").alias("reason")))
    stages = [
        {"id": "load_lama", "stage": "load_lama", "rows_in": 0, "rows_out": len(rows) + 3, "dropped": {}, "dropped_total": 0},
        {"id": "frequency_bin", "stage": "frequency_bin", "rows_in": len(rows) + 3, "rows_out": len(rows),
         "dropped": {"buffer": 3}, "dropped_total": 3},
        {"id": "write_dataset", "stage": "write_dataset", "rows_in": len(rows), "rows_out": len(rows), "dropped": {}, "dropped_total": 0},
    ]
    write_json(root / "stats.json", {"dataset": "lama-trex", "version": "1.0.0", "config_hash": "ab" * 32,
                                     "final_rows": len(rows), "stages": stages})
    manifest = {
        "kbench_manifest_version": 1, "dataset": "lama-trex", "version": "1.0.0", "recipe_file": "lama-trex.toml",
        "recipe": {"pipeline": {"name": "lama-trex"}}, "config_hash": "ab" * 32, "command": "kbench build lama-trex.toml",
        "resolved": {"pipeline": {"name": "lama-trex", "version": "1.0.0", "seed": 13, "config": "default"},
                     "stages": [{"id": s["id"], "stage": s["stage"], "params": {"k": 1}} for s in stages]},
        "inputs": [{"stage": "load_lama", "path": "../shared/data/lama_trex/TREx/P19.jsonl", "sha256": "0" * 64}],
        "packages": {"polars": pl.__version__},
    }
    write_json(root / "manifest.json", manifest)
    (root / ".kbench" / "stages").mkdir(parents=True, exist_ok=True)
    (root / ".kbench" / "lock").write_text("123")
    (root / ".kbench" / "stages" / "marker.json").write_text("{}")
    return root


@pytest.fixture
def lama_dir(tmp_path, shared_data) -> Path:
    return make_lama_folder(tmp_path / "lama", shared_data)


def front_matter(readme: Path) -> dict:
    """A data card's YAML metadata, as the Hub reads it."""
    from huggingface_hub import DatasetCard

    return DatasetCard(readme.read_text()).data.to_dict()
