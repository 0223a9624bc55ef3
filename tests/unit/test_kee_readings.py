"""A temperature-sampling method's PRS is undefined (its rank is the baseline's) and its SGR / DGR
come under each reading of "recovered" (MAPLE is silent on which): in the run's metrics, in the
comparison report, and for files written before either (a v1 file, a v2 file with 100 % Tied)."""

from __future__ import annotations

import json
from pathlib import Path

from kbench.metrics.uncertainty import proportion
from kbench.tasks.kee.report import comparison_tables
from kbench.tasks.kee.task import _summary
from kbench.report.legacy import to_v2

V1 = Path(__file__).resolve().parents[1] / "fixtures" / "results_v1" / "kee" / "results.json"
IDS = ["s1", "s2", "d1", "d2", "ok"]
# base: "ok" right, the rest wrong; seed-A partition (K = 3): s1, s2 shallow, d1, d2 deep
PARTITION = {"s1": [True, False, False], "s2": [False, False, True], "d1": [False] * 3, "d2": [False] * 3, "ok": [True] * 3}
SEED_B = {"s1": [False, True, False], "s2": [True, True, False], "d1": [False, False, True], "d2": [False] * 3,
          "ok": [True] * 3}


def _row(correct, rank, sample_correct=None):
    return {"correct": correct, "exact": correct, "gold_rank": rank, "sample_correct": sample_correct}


def _rows():
    base = {i: _row(i == "ok", 5) for i in IDS}
    # the vote (answer) is wrong everywhere but "ok"; the rank is the baseline's, as sampling leaves it
    temp = {i: _row(i == "ok", 5, SEED_B[i]) for i in IDS}
    recite = {i: _row(i in ("ok", "s1"), 3) for i in IDS}
    return {"baseline": base, "temp0.7": temp, "recite": recite}


def test_summary_prs_undefined_for_sampling_and_sgr_dgr_under_each_reading():
    out = _summary(["baseline", "temp0.7", "recite"], _rows(), {0.7: PARTITION}, IDS, 3)
    temp = out["temp0.7"]
    assert temp["prs"]["n"] == 0 and "neither the prompt nor the weights" in temp["prs"]["undefined"]
    assert temp["prs"]["tied"]["value"] is None   # not 100 % Tied
    assert out["recite"]["prs"]["n"] == 3 and "undefined" not in out["recite"]["prs"]   # s2, d1, d2: ranks 3 < 5
    rates = temp["beyond_sampling"]["0.7"]
    assert (rates["sgr"], rates["dgr"]) == (proportion(2, 2), proportion(1, 2))   # the run's reading: any of K
    assert rates["readings"] == {
        "any-of-k": {"sgr": proportion(2, 2), "dgr": proportion(1, 2)},
        "majority-of-k": {"sgr": proportion(1, 2), "dgr": proportion(0, 2)},
        "one-sample": {"sgr": proportion(1, 2), "dgr": proportion(0, 2)},
    }
    assert "readings" not in out["recite"]["beyond_sampling"]["0.7"]   # one answer: every reading is the same


def _envelope(per_technique: dict) -> dict:
    return {"schema": "kbench.results.v2", "task": "kee", "model": {"name": "m"}, "dataset": {"split": "test"},
            "settings": {"k": 3}, "headline": {}, "metrics": {"per_technique": per_technique}}


def test_report_shows_readings_side_by_side_and_why_prs_is_undefined():
    out = _summary(["baseline", "temp0.7", "recite"], _rows(), {0.7: PARTITION}, IDS, 3)
    markdown, table = comparison_tables(_envelope(out))
    assert "PRS undefined for temp0.7: a temperature-sampling method changes neither the prompt" in markdown
    assert '## SGR / DGR under each reading of "recovered"' in markdown
    header = next(line for line in markdown.splitlines() if line.startswith("| slice | technique | τ |"))
    assert header.split(" | ")[3:6] == ["SGR any-of-k", "SGR majority-of-k", "SGR one-sample"]
    assert "| overall | temp0.7 | 0.7 | 100.0 [34.2, 100.0]* | 50.0 [9.5, 90.5]* | 50.0 [9.5, 90.5]* |" in markdown
    assert "readings" not in table   # the main table keeps one column per rate


def test_a_file_written_before_shows_sampling_prs_undefined():
    # a v2 file from before: temp0.7's PRS was 100 % Tied
    tied = {"n": 4, "improved": proportion(0, 4), "tied": proportion(4, 4), "worsened": proportion(0, 4),
            "sign_test": {"plus": 0, "minus": 0, "n": 0, "p_value": 1.0}}
    old = _envelope({"baseline": {"accuracy": proportion(1, 5)}, "temp0.7": {"accuracy": proportion(1, 5), "prs": tied}})
    markdown, _ = comparison_tables(old)
    assert "PRS undefined for temp0.7" in markdown and "100.0 [51.0, 100.0]" not in markdown
    # a v1 file (tied 1.0 over 6 items) converts to an undefined PRS
    v1 = to_v2(json.loads(V1.read_text()), V1)
    prs = v1["metrics"]["per_technique"]["temp0.7"]["prs"]
    assert prs["n"] == 0 and prs["tied"]["value"] is None and prs["undefined"]
    assert v1["metrics"]["per_technique"]["decore"]["prs"]["tied"]["n"] > 0   # other techniques keep theirs
