"""XTEVAL runs compared on facts: extraction and downstream apart, queries paired by fact, never by query number."""

from __future__ import annotations

from kbench.metrics.uncertainty import mcnemar, proportion
from kbench.report.build import build_report
from kbench.report.compare import compare_runs
from kbench.report.items import read_items
from kbench.report.runs import load_runs
from tests.report_runs import lama_items
from tests.xteval_runs import xteval_rows, xteval_run


def _facts(shared_data, n):
    return [{k: item[k] for k in ("id", "relation", "subject", "object")} for item in lama_items(shared_data, n)]


def _compare(paths):
    runs = load_runs(paths)
    return compare_runs(runs, [read_items(r.path) for r in runs])


def test_a_copy_with_rotated_query_ids_compares_equal(shared_data, tmp_path):
    """The issue's measurement: the same facts with the same outcomes, query numbers rotated."""
    facts = _facts(shared_data, 90)
    rows = xteval_rows(facts, knows=lambda i: i % 2 == 0, answers=lambda fact, sp: int(fact.split("-")[1]) % 3 == 0)
    queries = [r for r in rows if r["kind"] == "query"]
    ids = [q["id"] for q in queries]
    rotated = {id(q): new for q, new in zip(queries, ids[1:] + ids[:1])}
    copy = [{**r, "id": rotated.get(id(r), r["id"])} for r in rows]
    by_id = [{q["id"]: q["correct"] for q in side if q["kind"] == "query"} for side in (rows, copy)]
    assert mcnemar(*by_id)["b"] > 0   # what pairing by per-run query id made of it
    a, b = xteval_run(tmp_path / "a", "m", rows), xteval_run(tmp_path / "b", "m", copy)
    (comparison,), _ = _compare([a, b])
    assert list(comparison.groups) == ["extraction (D^theta)", "downstream iid"]
    for part in comparison.groups.values():
        (pair,) = part["pairs"]
        assert (pair["b"], pair["c"], pair["p_value"]) == (0, 0, 1.0) and pair["difference"]["value"] == 0.0
    assert comparison.groups["downstream iid"]["n_shared"] == len(queries)


def test_two_models_pair_facts_of_both_test_splits_and_never_pool_rows(shared_data, tmp_path):
    facts = _facts(shared_data, 300)
    small = xteval_rows(facts[:60], knows=lambda i: i % 2 == 0, answers=lambda fact, sp: fact.endswith(("0", "1", "2")))
    large = xteval_rows(facts, knows=lambda i: i % 3 != 2, answers=lambda fact, sp: fact.endswith(("0", "5")))
    a, b = xteval_run(tmp_path / "small", "small", small), xteval_run(tmp_path / "large", "large", large)
    (comparison,), notes = _compare([a, b])
    assert comparison.n_shared == 60 and comparison.items == {"small": 60, "large": 300}   # facts, not rows
    tests = [{q["fact_id"]: q["correct"] for q in rows if q["kind"] == "query"} for rows in (small, large)]
    shared = set(tests[0]) & set(tests[1])
    part = comparison.groups["downstream iid"]
    assert part["paired"] and part["n_shared"] == len(shared) > 0
    assert part["items"] == {"small": len(tests[0]), "large": len(tests[1])}
    expected = mcnemar({f: tests[0][f] for f in shared}, {f: tests[1][f] for f in shared})
    assert (part["pairs"][0]["b"], part["pairs"][0]["c"]) == (expected["b"], expected["c"])
    build_report([a, b], tmp_path / "report")
    text = (tmp_path / "report" / "comparison.md").read_text()
    assert "Shared probed facts (extraction): 60. Left out: small 0 of 60, large 240 of 300." in text
    left = f"small {len(tests[0]) - len(shared)} of {len(tests[0])}, large {len(tests[1]) - len(shared)} of {len(tests[1])}"
    assert f"### downstream iid\n\nShared facts: {len(shared)}. Left out: {left}." in text
    assert "paired on facts" in text and notes == []


def test_different_split_seeds_are_compared_unpaired_and_say_so(shared_data, tmp_path):
    facts = _facts(shared_data, 120)
    one = xteval_rows(facts, knows=lambda i: i % 2 == 0, answers=lambda fact, sp: fact.endswith(("1", "2")))
    two = xteval_rows(facts, knows=lambda i: i % 2 == 0, answers=lambda fact, sp: fact.endswith("3"), split_seeds=2)
    a, b = xteval_run(tmp_path / "one", "one", one), xteval_run(tmp_path / "two", "two", two)
    (comparison,), _ = _compare([a, b])
    part = comparison.groups["downstream iid"]
    assert not part["paired"] and "split seeds differ (one: [0], two: [0, 1])" in part["reason"]
    (pair,) = part["pairs"]
    assert pair["difference"]["interval"] == "newcombe" and pair["difference"]["ci_low"] < pair["difference"]["value"]
    build_report([a, b], tmp_path / "report")
    text = (tmp_path / "report" / "comparison.md").read_text()
    assert "Not paired: the runs' split seeds differ" in text and "unpaired (Newcombe)" in text


def test_runs_under_different_top1_criteria_get_a_note(shared_data, tmp_path):
    facts = _facts(shared_data, 60)
    first = xteval_rows(facts, knows=lambda i: i % 2 == 0, answers=lambda fact, sp: True)
    full = xteval_rows(facts, knows=lambda i: i % 4 == 0, answers=lambda fact, sp: True)
    a = xteval_run(tmp_path / "first", "smollm2", first, top1="first-token")
    b = xteval_run(tmp_path / "full", "smollm2", full, top1="full-answer")
    _, notes = _compare([a, b])
    assert any("different criteria (smollm2 (first): first-token, smollm2 (full): full-answer)" in n
               and "--top1 full-answer" in n for n in notes)
    build_report([a, b], tmp_path / "report")
    assert "--top1 full-answer" in (tmp_path / "report" / "comparison.md").read_text()
    assert "--top1 full-answer" in (tmp_path / "report" / "index.html").read_text()


def test_the_primary_metric_is_a_setting_figure_not_a_difference(shared_data, tmp_path):
    rows = xteval_rows(_facts(shared_data, 60), knows=lambda i: i % 2 == 0, answers=lambda fact, sp: True, settings=("iid", "ood"))
    figures = {name: proportion(3, 10) for name in ("iid_minus_ood_usable_knowledge", "iid_usable_knowledge", "ood_usable_knowledge")}
    (run,) = load_runs([xteval_run(tmp_path / "a", "m", rows, headline=figures)])
    assert run.primary == "iid_usable_knowledge"
