"""`kbench evaluate choice` through the real CLI on a tiny built dataset: the task is found in its
own folder (kbench/tasks/choice), its options come from its Settings, it writes the envelope and
resumes, bad options are one line and exit code 2, and the report shows its section."""

from __future__ import annotations

import json

from kbench.evaluate.engine import validate
from tests.conftest import run_kbench
from tests.dataset_folders import facts_about, question_dataset
from tests.integration.test_evaluate_cli import rerun_computes_nothing

FACTS = facts_about("France", "Germany", "Italy", "Dante", "Marie Curie")
TEMPLATES = {"P36": "The capital of [X] is [Y] .", "P19": "[X] was born in [Y] ."}


def test_choice_from_the_cli_and_in_the_report(tiny_causal_dir, tmp_path):
    dataset = question_dataset(tmp_path / "ds", [
        {"id": f"q{i}", "relation": r, "template": TEMPLATES[r], "subject": s, "object": o, "answers": [o]}
        for i, (r, s, o) in enumerate(FACTS)])
    listed = run_kbench("evaluate", "--help")
    assert listed.returncode == 0 and "choice" in listed.stdout
    out = tmp_path / "run"
    args = ["evaluate", "choice", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--out", str(out),
            "--reduction", "mean", "--top-k", "2,3"]
    done = run_kbench(*args)
    assert done.returncode == 0, done.stderr
    assert "accuracy" in done.stdout and "p_at_3" in done.stdout
    results = json.loads((out / "results.json").read_text())
    validate(results, "results.v2.json")
    validate(results["metrics"], "results.choice.v2.json")
    assert results["task"] == "choice" and results["items"]["count"] == len(FACTS)
    assert results["settings"]["reduction"] == "mean" and results["settings"]["top_k"] == [2, 3]
    assert results["protocol"]["name"] == "bear-choice" and not results["protocol"]["faithful"]
    assert "mean-reduction" in {d["id"] for d in results["protocol"]["deviations"]}
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert all(len(i["scores"]) == len(results["metrics"]["answer_spaces"][i["relation"]]) for i in items)
    rerun_computes_nothing(args, out)

    report = run_kbench("report", str(out), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "report" / "index.html").read_text()
    assert "Most-chosen wrong answers" in page and "P36" in page

    missing = str(tmp_path / "none.json")
    for bad, flag in ((["--reduction", "max"], "--reduction"), (["--answer-space", missing], "--answer-space"),
                      (["--top-k", "0"], "--top-k")):
        wrong = run_kbench("evaluate", "choice", "--dataset", str(dataset), "--model", str(tiny_causal_dir),
                           "--out", str(tmp_path / "bad"), *bad)
        assert wrong.returncode == 2, wrong.stderr
        assert flag in wrong.stderr and "Traceback" not in wrong.stderr
