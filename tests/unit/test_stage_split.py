"""split: exact seeded fractions, relation-disjoint mode, preset splits."""

from __future__ import annotations

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stages.split import Split
from kbench.errors import UserError


def run(tmp_path, rows, seed=0, **params):
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=seed)
    out = Split(Split.Params(**params), ctx).run(pl.LazyFrame(rows)).kept.collect()
    assert out["id"].to_list() == [r["id"] for r in rows]  # order kept, nothing dropped
    return dict(zip(out["id"], out["split"]))


ROWS = [{"id": f"f{i:02d}", "relation": f"P{i % 5 + 1}"} for i in range(20)]


def test_random_split_has_exact_sizes_and_depends_on_the_seed(tmp_path):
    splits = run(tmp_path, ROWS, train=0.6, dev=0.2, test=0.2)
    assert sorted(splits.values()).count("train") == 12 and list(splits.values()).count("dev") == 4
    assert run(tmp_path, ROWS[::-1], train=0.6, dev=0.2, test=0.2) == splits
    assert run(tmp_path, ROWS, seed=5, train=0.6, dev=0.2, test=0.2) != splits


def test_relation_disjoint(tmp_path):
    splits = run(tmp_path, ROWS, mode="relation", train=0.6, dev=0, test=0.4)
    by_relation = {}
    for row in ROWS:
        by_relation.setdefault(row["relation"], set()).add(splits[row["id"]])
    assert all(len(s) == 1 for s in by_relation.values())
    assert sorted(s.pop() for s in by_relation.values()) == ["test", "test", "train", "train", "train"]


def test_preset_splits_are_kept_unless_told_otherwise(tmp_path):
    rows = [r | {"split": None} for r in ROWS]
    rows[0]["split"] = "train"
    rows[1]["split"] = "dev"
    splits = run(tmp_path, rows, train=0, dev=0, test=1)
    assert (splits["f00"], splits["f01"]) == ("train", "dev")
    assert {splits[r["id"]] for r in rows[2:]} == {"test"}
    assert set(run(tmp_path, rows, train=0, dev=0, test=1, keep_existing=False).values()) == {"test"}
    rows[2]["split"] = "holdout"
    with pytest.raises(UserError, match="unknown split 'holdout'"):
        run(tmp_path, rows)


def test_fractions_must_sum_to_one():
    with pytest.raises(ValueError, match="must be 1"):
        Split.Params(train=0.7, dev=0.2, test=0.2)
    Split.Params(train=0.7, dev=0.2, test=0.1)  # exact, despite binary floats
