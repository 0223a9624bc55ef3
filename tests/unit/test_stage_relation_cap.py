"""relation_cap: at most N per group, a seeded sample that does not depend on row order."""

from __future__ import annotations

import polars as pl

from kbench.construct.context import StageContext
from kbench.construct.stages.relation_cap import RelationCap, seeded_key


def run(tmp_path, rows, pipeline_seed=0, **params):
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=pipeline_seed)
    out = RelationCap(RelationCap.Params(**params), ctx).run(pl.LazyFrame(rows))
    kept, rejected = out.kept.collect(), out.rejected.collect()
    assert kept.height + rejected.height == len(rows)
    assert "__key" not in kept.columns and "__key" not in rejected.columns
    return kept, rejected


ROWS = [{"id": f"f{i}", "relation": "P19" if i < 6 else "P20", "source": "trex" if i % 2 else "google_re"}
        for i in range(8)]


def test_keeps_the_smallest_seeded_keys_per_relation(tmp_path):
    kept, rejected = run(tmp_path, ROWS, max_per_relation=2, pipeline_seed=7)
    expected = sorted((r for r in ROWS if r["relation"] == "P19"), key=lambda r: seeded_key(7, r["id"]))[:2]
    assert sorted(kept.filter(pl.col("relation") == "P19")["id"]) == sorted(r["id"] for r in expected)
    assert sorted(kept.filter(pl.col("relation") == "P20")["id"]) == ["f6", "f7"]  # only 2: nothing to cap
    assert rejected.height == 4 and set(rejected["reason"]) == {"relation_cap"}
    # input order is kept
    assert kept["id"].to_list() == [r["id"] for r in ROWS if r["id"] in set(kept["id"])]


def test_same_seed_same_sample_whatever_the_order_and_seed_matters(tmp_path):
    a, _ = run(tmp_path, ROWS, max_per_relation=3, pipeline_seed=1)
    b, _ = run(tmp_path, ROWS[::-1], max_per_relation=3, pipeline_seed=1)
    assert sorted(a["id"]) == sorted(b["id"])
    samples = {tuple(sorted(run(tmp_path, ROWS, max_per_relation=3, pipeline_seed=s)[0]["id"])) for s in range(6)}
    assert len(samples) > 1
    c, _ = run(tmp_path, ROWS, max_per_relation=3, pipeline_seed=99, seed=1)  # the stage's seed wins
    assert sorted(c["id"]) == sorted(a["id"])


def test_cap_per_source_and_relation(tmp_path):
    kept, _ = run(tmp_path, ROWS, max_per_relation=1, by=["source", "relation"])
    assert kept.group_by(["source", "relation"]).len()["len"].to_list() == [1, 1, 1, 1]


def test_default_cap_is_300(tmp_path):
    rows = [{"id": str(i), "relation": "P1"} for i in range(305)]
    kept, rejected = run(tmp_path, rows)
    assert (kept.height, rejected.height) == (300, 5)
