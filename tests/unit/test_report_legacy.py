"""Old (v1) result folders still open: the golden files written by the v1 code, through the
per-task adapters of kbench/report/legacy.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from kbench.errors import InputError
from kbench.metrics.uncertainty import proportion, wilson
from kbench.tasks.kee.report import comparison_tables
from kbench.report.runs import load_run

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "results_v1"
SCHEMAS = Path(__file__).resolve().parents[2] / "kbench" / "schemas"
TASKS = ("extraction", "kee", "qa", "truefalse", "xteval")


def _items(task: str) -> list[dict]:
    return [json.loads(line) for line in (GOLDEN / task / "items.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("task", TASKS)
def test_golden_files_follow_their_v1_schema_and_open_as_v2(task):
    results = json.loads((GOLDEN / task / "results.json").read_text())
    Draft202012Validator(json.loads((SCHEMAS / f"results.{task}.v1.json").read_text())).validate(results)
    run = load_run(GOLDEN / task)
    assert run.results["schema"] == "kbench.results.v2" and run.results["converted_from"] == f"results.{task}.v1"
    assert run.task == task and run.headline and run.primary in run.headline
    for estimate in run.headline.values():
        assert {"value", "n", "ci_low", "ci_high", "interval"} <= set(estimate)


def test_extraction_fractions_get_the_wilson_interval_of_their_items():
    run = load_run(GOLDEN / "extraction")
    items = _items("extraction")
    k, n = sum(i["correct"] for i in items), len(items)
    assert run.headline["maple_accuracy"] == proportion(k, n)
    # a mean has no interval in v1: shown as a point
    assert run.headline["mean_gold_logprob"]["interval"] is None and run.headline["mean_gold_logprob"]["n"] == n
    per_relation = run.metrics["per_relation"]
    assert {r: e["maple_accuracy"]["n"] for r, e in per_relation.items()} == {"P19": 3, "P36": 4, "P495": 2}


def test_kee_gain_and_loss_are_over_the_baselines_failures_and_successes():
    run = load_run(GOLDEN / "kee")
    items = [i for i in _items("kee") if i["correct"] is not None]
    base = {i["item_id"]: i["correct"] for i in items if i["technique"] == "baseline"}
    tech = {i["item_id"]: i["correct"] for i in items if i["technique"] == "temp0.7"}
    failures = [i for i, ok in base.items() if not ok]
    gain = run.metrics["per_technique"]["temp0.7"]["gain"]
    assert gain == proportion(sum(tech[i] for i in failures), len(failures))
    assert run.metrics["per_technique"]["temp0.7"]["loss"]["value"] is None  # no baseline success: undefined
    assert list(run.metrics["per_frequency_bin"]) == ["head", "tail"]


def test_qa_truefalse_xteval_adapters():
    qa = load_run(GOLDEN / "qa")
    assert set(qa.headline) == {"new_em", "unchanged_em", "updated_em", "prefers_updated"}
    assert qa.metrics["per_split"]["updated"]["em"]["n"] == 2
    tf = load_run(GOLDEN / "truefalse")
    k = sum(i["correct"] for i in _items("truefalse"))
    assert (tf.headline["accuracy"]["ci_low"], tf.headline["accuracy"]["ci_high"]) == wilson(k, 8)
    assert "U.S. History" in tf.metrics["per_book"]
    xt = load_run(GOLDEN / "xteval")
    iid = xt.metrics["per_setting"]["iid"]["usable_knowledge"]
    assert iid["value"] == 0.305 and iid["std"] == 0.0099 and iid["runs"] == 2 and xt.model_name == "smollm2-135m"


def test_kee_comparison_md_shows_intervals_for_v1_and_v2(tmp_path):
    markdown, table = comparison_tables(json.loads((GOLDEN / "kee" / "results.json").read_text()))
    assert "| temp0.7 | 7 | not recorded | 14.3 [2.6, 51.3]* |" in markdown and "undefined" in markdown
    v2 = json.loads((Path(__file__).resolve().parents[1] / "fixtures/results_v2/kee/results.json").read_text())
    markdown, table = comparison_tables(v2)
    assert "| recite | 40 | not recorded | 40.0 [26.4, 55.4] | 17.9 [7.9, 35.6]* | 8.3 [1.5, 35.4]* | 1 | 5 | 0.219 |" in markdown
    assert table.splitlines()[0] == "slice,technique,n,deviates from MAPLE,accuracy,gain,loss,mcnemar b,mcnemar c,mcnemar p"


def test_unknown_or_broken_results_are_input_errors(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"schema": "results.nope.v7", "task": "x"}))
    with pytest.raises(InputError, match=r"results.json \[schema\]: unknown results schema 'results.nope.v7'"):
        load_run(tmp_path)
    broken = tmp_path / "broken"
    shutil.copytree(GOLDEN / "extraction", broken)
    results = json.loads((broken / "results.json").read_text())
    del results["overall"]
    (broken / "results.json").write_text(json.dumps(results))
    with pytest.raises(InputError, match="not a valid results.extraction.v1 file"):
        load_run(broken)
