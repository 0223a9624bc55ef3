"""frequency_bin: cut points and buffers worked out by hand, ties, unknown frequencies, sources."""

from __future__ import annotations

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stages.frequency_bin import FrequencyBin, bin_cuts
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


def by_hand(counts: dict[str, int]) -> list[dict]:
    return [{"id": i, "evidence_count": c} for i, c in counts.items()]


def test_equal_counts_never_split(tmp_path):
    # all equal: one tie group over positions 0..9, median 4 -> torso; nothing is cut by id
    rows = [{"id": str(i), "evidence_count": 5} for i in (7, 3, 9, 0, 5, 1, 8, 2, 6, 4)]
    kept, rejected, _ = run(tmp_path, rows)
    assert set(kept["frequency_bin"]) == {"torso"} and kept.height == 10 and rejected.height == 0


def test_tie_straddling_a_cut_goes_whole_to_the_side_holding_more_of_it(tmp_path):
    # n=10, cuts 1, 3, 7, 9, 10. a and b tie at positions 0..1 across the head cut: an exact half goes
    # to the higher side (head). c, d, e tie at positions 2..4 across the buffer/torso cut: 2 of 3 are
    # torso, so all three are torso. f, g torso (5, 6); h, i buffer (7, 8); j tail (9).
    counts = {"a": 100, "b": 100, "c": 80, "d": 80, "e": 80, "f": 50, "g": 40, "h": 30, "i": 20, "j": 10}
    kept, rejected, _ = run(tmp_path, by_hand(counts))
    assert dict(zip(kept["id"], kept["frequency_bin"])) == {
        "a": "head", "b": "head", "c": "torso", "d": "torso", "e": "torso", "f": "torso", "g": "torso", "j": "tail"}
    assert sorted(rejected["id"]) == ["h", "i"]


def test_tie_straddling_a_buffer_is_dropped_whole_when_most_of_it_is_buffer(tmp_path):
    # g, h, i tie at positions 6..8: 6 is torso, 7 and 8 are buffer -> all three are buffer and dropped
    counts = {"a": 100, "b": 90, "c": 80, "d": 70, "e": 60, "f": 50, "g": 40, "h": 40, "i": 40, "j": 10}
    kept, rejected, _ = run(tmp_path, by_hand(counts))
    assert dict(zip(kept["id"], kept["frequency_bin"])) == {"a": "head", "d": "torso", "e": "torso", "f": "torso", "j": "tail"}
    assert sorted(rejected["id"]) == ["b", "c", "g", "h", "i"]


def test_details_record_cuts_sizes_and_moves(tmp_path):
    counts = {"a": 100, "b": 100, "c": 80, "d": 80, "e": 80, "f": 50, "g": 40, "h": 30, "i": 20, "j": 10}
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0)
    details = FrequencyBin(FrequencyBin.Params(), ctx).run(pl.LazyFrame(by_hand(counts))).details
    assert details == {
        "unit": "row", "rows_ranked": 10, "units_ranked": 10, "cut_positions": [1, 3, 7, 9, 10],
        "units_per_segment": {"head": 2, "buffer_upper": 0, "torso": 5, "buffer_lower": 2, "tail": 1},
        "frequency_range_per_segment": {"head": [100.0, 100.0], "torso": [40.0, 80.0], "buffer_lower": [20.0, 30.0],
                                        "tail": [10.0, 10.0]},
        "tie_groups_straddling_a_cut": 2, "units_moved_by_ties": 2}  # b: buffer -> head, c: buffer -> torso


def test_ties_do_not_depend_on_ids_or_order(tmp_path):
    counts = {"a": 100, "b": 100, "c": 80, "d": 80, "e": 80, "f": 50, "g": 40, "h": 30, "i": 20, "j": 10}
    renamed = {f"z{9 - k}": c for k, c in enumerate(counts.values())}  # ids now sort the other way round

    def bins(rows):
        kept, _, _ = run(tmp_path, rows)
        return sorted(zip(kept["frequency"], kept["frequency_bin"]))
    assert bins(list(reversed(by_hand(renamed)))) == bins(by_hand(counts))


def entity_rows() -> list[dict]:
    """Ten subjects Q1..Q10 with counts 100, 90, ..., 10; Q1 has five facts, the others one (Q10 by label only)."""
    rows = []
    for k in range(1, 11):
        subject_id = None if k == 10 else f"Q{k}"
        for j in range(5 if k == 1 else 1):
            rows.append({"id": f"f{k}-{j}", "subject_id": subject_id, "subject": f"S{k}", "evidence_count": 110 - 10 * k})
    return rows


def test_entity_bins_cut_percentiles_over_entities_and_every_fact_gets_its_subjects_bin(tmp_path):
    # 10 entities: Q1 head, Q2-Q3 buffer, Q4-Q7 torso, Q8-Q9 buffer, S10 tail; Q1's five facts are all head
    # (per row, 14 rows cut at 1, 4, 9, 12: Q1's five tied facts sit at 0..4, median 2 -> all buffer)
    kept, rejected, stage = run(tmp_path, entity_rows(), unit="entity")
    bins = dict(zip(kept["id"], kept["frequency_bin"]))
    assert bins == {**{f"f1-{j}": "head" for j in range(5)}, "f4-0": "torso", "f5-0": "torso", "f6-0": "torso",
                    "f7-0": "torso", "f10-0": "tail"}
    assert sorted(rejected["id"]) == ["f2-0", "f3-0", "f8-0", "f9-0"]
    _, per_row_rejected, _ = run(tmp_path, entity_rows())
    assert {f"f1-{j}" for j in range(5)} <= set(per_row_rejected["id"])


def test_entity_frequency_is_the_max_or_the_sum_of_its_rows(tmp_path):
    # per-fact counts (evidence): Q1 has facts with 1 and 1 (sum 2, max 1); Q2 one fact with 2
    rows = [{"id": "a", "subject_id": "Q1", "subject": "A", "evidence_count": 1},
            {"id": "b", "subject_id": "Q1", "subject": "A", "evidence_count": 1},
            {"id": "c", "subject_id": "Q2", "subject": "B", "evidence_count": 2}]
    kept, _, _ = run(tmp_path, rows, unit="entity", percentages=[50, 0, 0, 0, 50])
    assert dict(zip(kept["id"], kept["frequency_bin"])) == {"a": "tail", "b": "tail", "c": "head"}
    kept, _, _ = run(tmp_path, rows, unit="entity", entity_frequency="sum", percentages=[50, 0, 0, 0, 50])
    assert dict(zip(kept["id"], kept["frequency"])) == {"a": 2.0, "b": 2.0, "c": 2.0}
    assert set(kept["frequency_bin"]) == {"head"}  # Q1 and Q2 tie at 2: one group at 0..1, an exact half goes up


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


def test_binning_twice_replaces_the_first_bins(tmp_path):
    rows = [{"id": str(i), "evidence_count": i, "frequency": 1.0, "frequency_bin": "head"} for i in range(4)]
    kept, _, _ = run(tmp_path, rows, percentages=[50, 0, 0, 0, 50])
    assert dict(zip(kept["id"], kept["frequency_bin"])) == {"0": "tail", "1": "tail", "2": "head", "3": "head"}
    assert kept["frequency"].to_list() == [0.0, 1.0, 2.0, 3.0]
