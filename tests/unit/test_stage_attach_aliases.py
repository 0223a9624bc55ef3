"""attach_aliases on an inline names table in the X-FACTR format."""

from __future__ import annotations

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stages.attach_aliases import AttachAliases
from kbench.errors import InputError


def run(tmp_path, table_text: str, rows: list[dict]):
    (tmp_path / "names.txt").write_text(table_text, encoding="utf-8")
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0)
    stage = AttachAliases(AttachAliases.Params(aliases_file="names.txt"), ctx)
    assert stage.input_files() == [tmp_path / "names.txt"]
    return stage.run(pl.LazyFrame(rows)).kept.collect().to_dicts()


def test_adds_names_without_the_label_deduplicated_and_sorted(tmp_path):
    table = "Q90\tParis\tCity of Light\tParis\n\nQ142\tFrance\tRépublique française\nQ90\tLutetia\n"
    rows = [
        {"subject": "Paris", "subject_id": "Q90", "object": "France", "object_id": "Q142", "object_aliases": ["Fr", "Fr"]},
        {"subject": "Nobody", "subject_id": None, "object": "France", "object_id": "Q999", "object_aliases": None},
    ]
    out = run(tmp_path, table, rows)
    assert out[0]["subject_aliases"] == ["City of Light", "Lutetia"]
    assert out[0]["object_aliases"] == ["Fr", "République française"]
    assert out[1]["subject_aliases"] == [] and out[1]["object_aliases"] == []
    assert [r["subject"] for r in out] == ["Paris", "Nobody"]  # order kept, nothing dropped


@pytest.mark.parametrize("text, line, message", [
    ("Q1\tA\nX2\tB\n", 2, "Wikidata item id"),
    ("Q1\tA\nQ2\n", 2, "has no names"),
    ("", None, "file is empty"),
])
def test_bad_table_names_file_and_line(tmp_path, text, line, message):
    with pytest.raises(InputError, match=message) as info:
        run(tmp_path, text, [{"subject": "a", "subject_id": "Q1", "object": "b", "object_id": "Q2"}])
    assert info.value.line == line and info.value.path.endswith("names.txt")


def test_real_xfactr_table(tmp_path, shared_data):
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0)
    path = shared_data / "wikidata_aliases_xfactr" / "TREx_en.txt"
    stage = AttachAliases(AttachAliases.Params(aliases_file=str(path)), ctx)
    out = stage.run(pl.LazyFrame([{"subject": "Earth", "subject_id": "Q2", "object": "human", "object_id": "Q5"}])).kept.collect()
    row = out.to_dicts()[0]
    assert "Planet Earth" in row["subject_aliases"] and "Earth" not in row["subject_aliases"]
    assert row["object_aliases"] == ["homosapiens", "human being", "humankind", "people", "person"]
