"""XTEVAL's headline from the task's rows: one run has an interval from its queries; IID - OOD beside them."""

import pytest

from kbench.errors import UserError
from kbench.tasks.xteval.headline import downstream_headline
from tests.report_runs import lama_items
from tests.xteval_runs import xteval_rows


def _rows(shared_data):
    facts = [{k: item[k] for k in ("id", "relation", "subject", "object")} for item in lama_items(shared_data, 120)]
    return xteval_rows(facts, knows=lambda i: i % 2 == 0, answers=lambda fact, sp: int(fact.split("-")[1]) % 4 != 0,
                       settings=("iid", "ood"))


def test_one_run_per_setting_has_intervals_and_a_difference(shared_data):
    rows = _rows(shared_data)
    headline, metrics = downstream_headline(rows, {0: (60, 120)}, ["iid", "ood"], seed=0)
    for setting in ("iid", "ood"):
        queries = [r for r in rows if r["kind"] == "query" and r["setting"] == setting]
        accuracy = headline[f"{setting}_downstream_accuracy"]
        assert accuracy["value"] == pytest.approx(sum(q["correct"] for q in queries) / len(queries))
        assert accuracy["runs"] == 1 and accuracy["n"] == len(queries)
        assert accuracy["ci_low"] < accuracy["value"] < accuracy["ci_high"]
        assert headline[f"{setting}_usable_knowledge"]["value"] == pytest.approx(0.5 * accuracy["value"])
    difference = headline["iid_minus_ood_downstream_accuracy"]
    assert difference["value"] == pytest.approx(headline["iid_downstream_accuracy"]["value"]
                                                - headline["ood_downstream_accuracy"]["value"])
    assert difference["ci_low"] <= difference["value"] <= difference["ci_high"]
    assert list(headline)[-2:] == ["iid_minus_ood_downstream_accuracy", "iid_minus_ood_usable_knowledge"]
    assert metrics["iid_minus_ood"]["usable_knowledge"] is headline["iid_minus_ood_usable_knowledge"]
    assert downstream_headline(rows, {0: (60, 120)}, ["iid", "ood"], seed=0) == (headline, metrics)   # reruns agree


def test_one_setting_has_no_difference_and_old_rows_are_refused(shared_data):
    rows = [r for r in _rows(shared_data) if r.get("setting") != "ood"]
    headline, metrics = downstream_headline(rows, {0: (60, 120)}, ["iid"], seed=0)
    assert metrics == {} and not any("minus" in k for k in headline)
    old = [{k: v for k, v in r.items() if k != "fact_id"} if r["kind"] == "query" else r for r in rows]
    with pytest.raises(UserError, match="older kbench"):
        downstream_headline(old, {0: (60, 120)}, ["iid"], seed=0)
