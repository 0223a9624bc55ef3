"""inspect_dataset on a tiny dataset built in-process, and on folders that are not datasets."""

from __future__ import annotations

import io

import polars as pl
import pytest
from rich.console import Console

from kbench.construct.inspect import inspect_dataset
from kbench.construct.recipe import load_recipe
from kbench.construct.runner import run_recipe
from kbench.errors import UserError

FACTS = [
    ('{"uuid": "u%d", "sub_uri": "Q%d", "sub_label": "Person %d", "obj_uri": "Q90", "obj_label": "Paris", '
     '"evidences": [%s]}') % (i, i + 1, i, ", ".join(["{}"] * i)) for i in range(10)
]


def build(tmp_path):
    (tmp_path / "trex").mkdir()
    (tmp_path / "trex" / "relations.jsonl").write_text(
        '{"relation": "P19", "template": "[X] was born in [Y] .", "label": "place of birth"}\n')
    (tmp_path / "trex" / "P19.jsonl").write_text("\n".join(FACTS) + "\n")
    recipe = tmp_path / "tiny.toml"
    recipe.write_text('[pipeline]\nname = "tiny"\n\n[[stages]]\nstage = "load_lama"\ntrex = "trex"\n\n'
                      '[[stages]]\nstage = "frequency_bin"\n\n[[stages]]\nstage = "to_questions"\n\n'
                      '[[stages]]\nstage = "split"\ntrain = 0.5\ndev = 0.0\ntest = 0.5\n\n[[stages]]\nstage = "write_dataset"\n')
    out = tmp_path / "out"
    run_recipe(load_recipe(recipe), out, cache_dir=tmp_path / "cache")
    return out


def render(run_dir) -> str:
    buffer = io.StringIO()
    inspect_dataset(run_dir, console=Console(file=buffer, width=200))
    return buffer.getvalue()


def test_prints_stages_splits_relations_and_bins(tmp_path):
    out = build(tmp_path)
    text = render(out)
    assert "frequency_buffer: 4" in text  # 10 facts: ranks 1-2 and 7-8 are buffers
    assert "place of birth" in text and "rows per frequency bin" in text
    bins = [line for line in text.splitlines() if line.startswith(("│ head", "│ torso", "│ tail"))]
    assert [b.split("│")[1].strip() for b in bins] == ["head", "torso", "tail"]
    assert "rows per domain" not in text


def test_domain_table_when_the_column_exists(tmp_path):
    out = build(tmp_path)
    path = out / "data" / "default" / "test.parquet"
    frame = pl.read_parquet(path)
    frame.with_columns(pl.lit("history").alias("domain")).write_parquet(path)
    assert "rows per domain" in render(out) and "history" in render(out)


def test_not_a_dataset(tmp_path):
    with pytest.raises(UserError, match="is not a folder"):
        inspect_dataset(tmp_path / "missing")
    with pytest.raises(UserError, match="no stats.json"):
        inspect_dataset(tmp_path)
    (tmp_path / "stats.json").write_text("{not json")
    with pytest.raises(UserError, match="damaged"):
        inspect_dataset(tmp_path)
