"""frequency_bin with cut = "mass" (Head-to-Tail): thirds of the total popularity, worked out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from kbench.construct.stages.frequency_bin import FrequencyBin, mass_segments
from tests.unit.test_stage_frequency_bin import by_hand, run


def test_mass_segments_by_hand():
    # total 100; the mass before each unit: 0 | 60 | 80, 90, 95, 98
    # head while 3 x before < 100, torso while 3 x before < 200
    assert mass_segments([60, 20, 10, 5, 3, 2]) == [0, 1, 2, 2, 2, 2]
    # total 9 in units of 1: before 0..2 head (3 x 2 < 9), 3..5 torso (3 x 5 < 18), 6..8 tail
    assert mass_segments([1] * 9) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    # the unit that makes the running total reach 1/3 is the last head unit: 30 + 10 >= 100 / 3
    assert mass_segments([30, 10, 30, 30]) == [0, 0, 1, 2]
    assert mass_segments([]) == []


def test_rows_cut_by_mass_keep_their_raw_popularity(tmp_path):
    counts = {"d": 5, "a": 60, "f": 2, "c": 10, "b": 20, "e": 3}
    kept, rejected, _ = run(tmp_path, by_hand(counts), cut="mass")
    assert rejected.height == 0  # no buffers
    assert kept["id"].to_list() == list(counts)  # input order kept
    assert dict(zip(kept["id"], kept["frequency_bin"])) == {
        "a": "head", "b": "torso", "c": "tail", "d": "tail", "e": "tail", "f": "tail"}
    assert dict(zip(kept["id"], kept["frequency"])) == {k: float(v) for k, v in counts.items()}


def test_details_record_the_mass_of_each_third(tmp_path):
    # total 100: c starts at 80, past 2/3; a total of 90 would put b (starting at 60 = 2/3) in the tail
    _, _, stage = run(tmp_path, by_hand({"a": 50, "b": 30, "c": 20}), cut="mass")
    details = stage.run(pl.LazyFrame(by_hand({"a": 50, "b": 30, "c": 20}))).details
    assert details["cut"] == "mass" and details["mass_total"] == 100
    assert details["units_per_segment"] == {"head": 1, "torso": 1, "tail": 1}
    assert details["mass_per_segment"] == {"head": 50, "torso": 30, "tail": 20}


def test_ties_stay_whole_under_the_mass_cut(tmp_path):
    # 1 x 9: positions 0..8 all tie; the group's median position 4 is torso: every unit torso
    kept, _, _ = run(tmp_path, [{"id": str(i), "evidence_count": 1} for i in range(9)], cut="mass")
    assert set(kept["frequency_bin"]) == {"torso"}


def test_entities_are_cut_by_mass_and_every_fact_gets_its_entitys_bin(tmp_path):
    rows = [{"id": "1", "subject": "A", "subject_id": "Q1", "evidence_count": 50},
            {"id": "2", "subject": "A", "subject_id": "Q1", "evidence_count": 70},
            {"id": "3", "subject": "B", "subject_id": "Q2", "evidence_count": 30},
            {"id": "4", "subject": "C", "subject_id": "Q3", "evidence_count": 10},
            {"id": "5", "subject": "D", "subject_id": "Q4", "evidence_count": 5}]
    kept, _, _ = run(tmp_path, rows, cut="mass", unit="entity")  # entities by max: A 70, B 30, C 10, D 5
    assert dict(zip(kept["id"], kept["frequency_bin"])) == {"1": "head", "2": "head", "3": "torso", "4": "tail", "5": "tail"}


def test_percentages_belong_to_the_rank_cut():
    with pytest.raises(ValueError, match='percentages apply to cut = "rank"'):
        FrequencyBin.Params(cut="mass", percentages=[10, 20, 40, 20, 10])
    with pytest.raises(ValueError):
        FrequencyBin.Params(cut="thirds")
