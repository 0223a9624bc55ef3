"""Models compared on their shared items only, paired (exact McNemar); disjoint runs refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


from kbench.metrics.uncertainty import binomial_two_sided, mcnemar, proportion
from kbench.report.build import build_report
from kbench.report.compare import compare_runs, correctness
from kbench.report.items import read_items
from kbench.report.runs import load_run, load_runs
from tests.report_runs import extraction_run, lama_items, predict

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "results_v1"


def test_runs_over_different_limits_are_compared_on_the_shared_items(shared_data, tmp_path):
    items = lama_items(shared_data, 300)
    a = extraction_run(tmp_path / "a", "model-a", predict(items, 3))          # 300 items
    b = extraction_run(tmp_path / "b", "model-b", predict(items[:100], 2))    # the first 100 of them
    index = build_report([a, b], tmp_path / "report")
    first = {f"test-{i}": i % 3 == 0 for i in range(100)}
    second = {f"test-{i}": i % 2 == 0 for i in range(100)}
    expected = mcnemar(first, second)
    assert (expected["b"], expected["c"]) == (17, 33)   # right only under a / only under b
    markdown = (tmp_path / "report" / "comparison.md").read_text()
    assert "Shared items: 100. Left out: model-a 200 of 300, model-b 0 of 100." in markdown
    assert f"| model-a | model-b | 17 | 33 | {binomial_two_sided(17, 50):.3g} |" in markdown
    assert "| model-a | 0.340 [0.255, 0.437] | 100 |" in markdown   # 34 of the shared 100, not 100 of 300
    html = index.read_text()
    assert "100 shared items" in html and "model-a: 200 of 300 left out" in html
    assert "evaluated on different items" in html   # the per-run summary says its n differ
    assert (tmp_path / "report" / "model_comparison.png").is_file()


def test_kee_runs_are_compared_technique_by_technique(tmp_path):
    first = tmp_path / "first"
    second = tmp_path / "second"
    shutil.copytree(GOLDEN / "kee", first)
    shutil.copytree(GOLDEN / "kee", second)
    rows = [json.loads(line) for line in (second / "items.jsonl").read_text().splitlines()]
    for row in rows:  # the second model gets the first three items right under every technique
        if row["correct"] is not None and row["item_id"] in ("f0", "f1", "f2"):
            row["correct"] = True
    (second / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    runs = load_runs([first, second])
    comparisons, notes = compare_runs(runs, [read_items(r.path) for r in runs])
    (c,) = comparisons
    assert notes == [] and c.n_shared == 7 and list(c.groups) == ["baseline", "decore", "temp0.7"]
    base = c.groups["baseline"]
    assert base["accuracy"]["tiny (second)"] == proportion(3, 7)
    assert (base["pairs"][0]["b"], base["pairs"][0]["c"]) == (0, 3)
    assert set(correctness(rows)) == {"baseline", "decore", "temp0.7"}   # sampling partitions have no correctness


def test_qa_rows_are_paired_on_the_em_that_counts():
    rows = read_items(GOLDEN / "qa")
    columns = load_run(GOLDEN / "qa").outcome_columns  # as the QA task declares them
    assert columns == ("em", "em_updated")
    outcome = correctness(rows, columns)[""]
    assert len(outcome) == len(rows) == 5
    edited = next(r for r in rows if r["category"] == "edited")
    assert outcome[edited["id"]] == bool(edited["em_updated"])


def test_runs_under_different_settings_are_compared_with_a_note(shared_data, tmp_path):
    """One model under two protocols: paired on shared items, and the note says the settings differ."""
    items = lama_items(shared_data, 60)
    a = extraction_run(tmp_path / "maple", "smollm2", predict(items, 3))
    b = extraction_run(tmp_path / "lama", "smollm2", predict(items[:40], 2))
    for folder, protocol, limit in ((a, "maple", 60), (b, "lama", 40)):
        results = json.loads((folder / "results.json").read_text())
        results["settings"] = {**results["settings"], "protocol": protocol, "limit": limit}
        (folder / "results.json").write_text(json.dumps(results))
    runs = load_runs([a, b])
    comparisons, notes = compare_runs(runs, [read_items(r.path) for r in runs])
    assert comparisons[0].n_shared == 40
    assert notes == ["extraction: the runs differ in settings besides the model, so the paired test compares these too: "
                     "protocol (smollm2 (maple): maple, smollm2 (lama): lama)"]   # limit only changes the item set
