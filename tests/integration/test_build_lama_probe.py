"""The original LAMA probe (pipelines/lama.toml) through the CLI, on the real data in ../shared/data.

`kbench build` must keep every T-REx and Google-RE test fact (22,881 + 5,528 = 28,409 test rows),
each with its source, Google-RE's relations apart from T-REx's, aliases attached, the AutoPrompt
facts as train/dev; `kbench card` must say so. The build takes ~5 s here (no Wikidata checks:
the probe drops nothing, so it needs none).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import REPO_ROOT, run_kbench

RECIPE = REPO_ROOT / "pipelines" / "lama.toml"
GOOGLE_RE = {"date_of_birth": "P569", "place_of_birth": "P19", "place_of_death": "P20"}


@pytest.fixture(scope="module")
def built(tmp_path_factory, shared_data) -> Path:
    out = tmp_path_factory.mktemp("probe") / "lama"
    result = run_kbench("build", str(RECIPE), "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def source_ids(shared_data: Path) -> dict[str, set[str]]:
    """The uuid of every test fact in the shared LAMA files, by source."""
    ids: dict[str, set[str]] = {"trex": set(), "google_re": set()}
    for source, pattern in (("trex", "lama_trex/TREx/P*.jsonl"), ("google_re", "lama_google_re/*_test.jsonl")):
        for path in shared_data.glob(pattern):
            ids[source] |= {json.loads(line)["uuid"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    return ids


def test_every_test_fact_is_kept_with_its_source(built, shared_data):
    test = pl.read_parquet(built / "data" / "default" / "test.parquet")
    assert test.height == 28409
    assert dict(test.group_by("source").len().iter_rows()) == {"trex": 22881, "google_re": 5528}
    expected = source_ids(shared_data)
    for source, ids in expected.items():
        assert set(test.filter(pl.col("source") == source)["id"]) == ids
    assert test["relation"].filter(test["source"] == "trex").n_unique() == 28
    stats = json.loads((built / "stats.json").read_text())
    assert all(s["dropped_total"] == 0 for s in stats["stages"])


def test_google_re_relations_are_never_merged_with_trex(built):
    test = pl.read_parquet(built / "data" / "default" / "test.parquet")
    google = test.filter(pl.col("source") == "google_re")
    assert {(r, p) for r, p in google.select("relation", "wikidata_property").unique().iter_rows()} == {
        (f"google_re:{name}", pid) for name, pid in GOOGLE_RE.items()}
    # a table grouped by relation can never mix the two sources
    assert test.group_by("relation").agg(pl.col("source").n_unique())["source"].max() == 1
    assert set(test.filter(pl.col("relation") == "P19")["source"]) == {"trex"}
    # birth dates keep their year as the object; Google-RE aliases are attached
    dob = google.filter(pl.col("relation") == "google_re:date_of_birth")
    assert dob.height == 1825 and dob["object"].str.contains(r"^\d{3,4}$").all()  # years (a few before 1000)
    assert google["question"].str.starts_with("What is the").sum() == 0  # every Google-RE relation has its question form


def test_aliases_and_train_dev(built):
    test = pl.read_parquet(built / "data" / "default" / "test.parquet")
    paris = test.filter((pl.col("object_id") == "Q90") & (pl.col("source") == "trex"))
    assert paris.height and all(answers[0] == "Paris" and len(answers) > 1 for answers in paris["answers"])
    assert (test["answers"].list.len() > 1).mean() > 0.5
    train = pl.read_parquet(built / "data" / "default" / "train.parquet")
    dev = pl.read_parquet(built / "data" / "default" / "dev.parquet")
    assert (train.height, dev.height) == (31115, 7777)
    assert set(train["source"]) == {"autoprompt_train"} and set(dev["source"]) == {"autoprompt_dev"}


def test_card_says_it_is_the_complete_probe(built):
    carded = run_kbench("card", str(built))
    assert carded.returncode == 0, carded.stderr
    readme = (built / "README.md").read_text()
    assert "pretty_name: LAMA probe (T-REx and Google-RE)" in readme
    assert "**No row was dropped.**" in readme and "28,409 test rows" in readme
    assert "| google_re | 0 | 5,528 | 0 | 5,528 |" in readme and "| trex | 0 | 22,881 | 0 | 22,881 |" in readme
    assert "| google_re:place_of_birth | place of birth | 0 | 2,937 | 0 | 2,937 |" in readme
    assert "kbench build pipelines/lama.toml --out lama" in readme


def test_the_whole_probe_is_faithful_to_lama(built):
    block = json.loads((built / "manifest.json").read_text())["protocol"]
    assert block["name"] == "lama-probe" and block["faithful"] is True and block["deviations"] == []
    assert block["reference"].startswith("Petroni et al. 2019")
    assert "**faithful to lama-probe**" in (built / "README.md").read_text()
