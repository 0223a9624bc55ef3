"""frequency_bin: cut points and buffers worked out by hand, ties, unknown frequencies, sources."""

from __future__ import annotations

import polars as pl
import pytest

from kbench.build.context import StageContext
from kbench.build.stages.frequency_bin import FrequencyBin, bin_cuts
from kbench.errors import InputError


def run(tmp_path, rows, **params):
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0)
    stage = FrequencyBin(FrequencyBin.Params(**params), ctx)
    out = stage.run(pl.LazyFrame(rows))
    kept, rejected = out.kept.collect(), out.rejected.collect()
    assert kept.height + rejected.height == len(rows)
    return kept, rejected, stage


def test_cut_points_by_hand():
    # n=10: 10% of 10 = 1 head; 30% -> 3; 70% -> 7; 90% -> 9
    assert bin_cuts(10, [10, 20, 40, 20, 10]) == [1, 3, 7, 9, 10]
    # n=25: floor(2.5)=2, floor(7.5)=7, floor(17.5)=17, floor(22.5)=22, 25
    assert bin_cuts(25, [10, 20, 40, 20, 10]) == [2, 7, 17, 22, 25]
    # exact arithmetic: 33.3 + 33.3 + 33.4 is 100 and the last cut is n
    assert bin_cuts(3, [33.3, 0, 33.3, 0, 33.4]) == [0, 0, 1, 1, 3]
    assert bin_cuts(0, [10, 20, 40, 20, 10]) == [0, 0, 0, 0, 0]


def test_ten_rows_by_hand(tmp_path):
    # frequencies: a=100, b=90, ..., j=10, given shuffled.
    # ranks: a(0) head | b, c (1, 2) buffer | d, e, f, g (3..6) torso | h, i (7, 8) buffer | j (9) tail
    order = [("e", 60), ("a", 100), ("j", 10), ("c", 80), ("h", 30), ("b", 90), ("f", 50), ("d", 70), ("i", 20), ("g", 40)]
    kept, rejected, _ = run(tmp_path, [{"id": i, "evidence_count": c} for i, c in order])
    assert kept["id"].to_list() == ["e", "a", "j", "f", "d", "g"]  # input order kept
    assert dict(zip(kept["id"], kept["frequency_bin"])) == {
        "a": "head", "d": "torso", "e": "torso", "f": "torso", "g": "torso", "j": "tail"}
    assert sorted(rejected["id"]) == ["b", "c", "h", "i"]
    assert set(rejected["reason"]) == {"frequency_buffer"}
    assert kept.filter(pl.col("id") == "a")["frequency"].item() == 100.0


def test_ties_are_broken_by_id(tmp_path):
    # all equal: rank order is the id order; n=10 -> id 0 head, 1-2 buffer, 3-6 torso, 7-8 buffer, 9 tail
    rows = [{"id": str(i), "evidence_count": 5} for i in (7, 3, 9, 0, 5, 1, 8, 2, 6, 4)]
    kept, _, _ = run(tmp_path, rows)
    assert dict(zip(kept["id"], kept["frequency_bin"])) == {
        "0": "head", "3": "torso", "4": "torso", "5": "torso", "6": "torso", "9": "tail"}


def test_unknown_frequency_is_dropped_or_kept(tmp_path):
    rows = [{"id": "a", "evidence_count": None}] + [{"id": f"k{i}", "evidence_count": i} for i in range(10)]
    _, rejected, _ = run(tmp_path, rows)
    assert rejected.filter(pl.col("id") == "a")["reason"].item() == "frequency_unknown"
    kept, rejected, _ = run(tmp_path, rows, missing="keep")
    assert kept.filter(pl.col("id") == "a")["frequency_bin"].item() is None
    assert rejected.height == 4  # only the buffers of the 10 known rows


def test_custom_percentages(tmp_path):
    rows = [{"id": str(i), "evidence_count": i} for i in range(4)]
    kept, rejected, _ = run(tmp_path, rows, percentages=[50, 0, 0, 0, 50])
    assert dict(zip(kept["id"], kept["frequency_bin"])) == {"3": "head", "2": "head", "1": "tail", "0": "tail"}
    assert rejected.height == 0


def test_counts_table_tsv_and_parquet(tmp_path):
    (tmp_path / "counts.tsv").write_text("qid\tcount\nQ1\t500\nQ2\t3\n", encoding="utf-8")
    rows = [{"id": "x", "subject_id": "Q1", "object_id": "Q2"}, {"id": "y", "subject_id": "Q9", "object_id": "Q1"}]
    kept, rejected, stage = run(tmp_path, rows, source="counts_table", options={"path": "counts.tsv"},
                                percentages=[100, 0, 0, 0, 0])
    assert stage.input_files() == [tmp_path / "counts.tsv"]
    assert kept.to_dicts()[0]["frequency"] == 500.0
    assert rejected["reason"].to_list() == ["frequency_unknown"]
    pl.DataFrame({"qid": ["Q1", "Q2"], "count": [500, 3]}).write_parquet(tmp_path / "counts.parquet")
    kept, _, _ = run(tmp_path, rows, source="counts_table", options={"path": "counts.parquet", "entity": "object"},
                     percentages=[100, 0, 0, 0, 0])
    assert kept["frequency"].to_list() == [3.0, 500.0]


@pytest.mark.parametrize("text, line, message", [
    ("Q1\tmany\n", 1, "not a number"),
    ("Q1\t5\nQ1\t6\n", 2, "listed twice"),
    ("Q1\t5\tx\n", 1, "two tab-separated"),
    ("P1\t5\n", 1, "Wikidata item id"),
])
def test_bad_counts_table_names_file_and_line(tmp_path, text, line, message):
    (tmp_path / "counts.tsv").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message) as info:
        run(tmp_path, [{"id": "x", "subject_id": "Q1"}], source="counts_table", options={"path": "counts.tsv"})
    assert info.value.line == line


def test_params_are_validated():
    with pytest.raises(ValueError, match="unknown frequency source 'pageviewz'"):
        FrequencyBin.Params(source="pageviewz")
    with pytest.raises(ValueError, match="options.path"):
        FrequencyBin.Params(source="counts_table", options={"pth": "x"})
    with pytest.raises(ValueError, match="summing to 100"):
        FrequencyBin.Params(percentages=[10, 20, 40, 20, 20])
