"""`kbench evaluate qa` on a tiny random Llama over an evolving dataset built from inline snapshots."""

from __future__ import annotations

import json

import pytest

from kbench.errors import UserError
from kbench.evaluate.engine import evaluate, validate
from kbench.tasks.qa.task import KnowledgeUpdateQA, QASettings, aggregate
from kbench.evaluate.task import RunContext
from kbench.tasks.qa.metrics import official_em, official_f1
from kbench.metrics.uncertainty import proportion
from tests.dataset_folders import evolving_dataset
from tests.fixtures_models import cached_model

@pytest.fixture(scope="module")
def evolving(tmp_path_factory):
    return evolving_dataset(tmp_path_factory.mktemp("evo"))


def run_qa(model, dataset, out, settings: QASettings) -> dict:
    return evaluate(KnowledgeUpdateQA(), RunContext(settings=settings, dataset=dataset, model=model, run_dir=out))


@pytest.fixture
def runner(tiny_causal, tmp_path):
    return cached_model(tiny_causal, tmp_path / "cache.sqlite", batch_size=4)


def test_slices_scores_and_preference(runner, evolving, tmp_path):
    out = tmp_path / "qa"
    results = run_qa(runner, evolving, out, QASettings(max_new_tokens=4))
    validate(results, "results.v2.json")
    splits = results["metrics"]["splits"]
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert {s: splits[s]["em"]["n"] for s in splits} == {"unchanged": 2, "new": 1, "outdated": 2, "updated": 2}
    for item in items:
        if item["category"] == "edited":
            assert item["em_outdated"] == official_em(item["prediction"], item["answer1"])
            assert item["f1_updated"] == official_f1(item["prediction"], item["answer2"])
            assert item["prefers_updated"] == (item["logprob_answer2"] > item["logprob_answer1"])
            # the log-likelihoods are the runner's, for " " + answer after the prompt
            (lp1, _), (lp2, _) = runner.score_answers([item["prompt"]] * 2, [" " + item["answer1"], " " + item["answer2"]])
            assert (item["logprob_answer1"], item["logprob_answer2"]) == pytest.approx((lp1, lp2))
    edited = [i for i in items if i["category"] == "edited"]
    preference = results["metrics"]["edited_preference"]["prefers_updated"]
    assert (preference["k"], preference["n"]) == (sum(i["prefers_updated"] for i in edited), 2)
    again = run_qa(runner, evolving, out, QASettings(max_new_tokens=4))
    assert again["timing"]["items_computed"] == 0 and again["metrics"] == results["metrics"]


def test_aggregate_by_hand_and_ties_count_for_outdated():
    items = [
        {"category": "unchanged", "em": 1.0, "f1": 1.0},
        {"category": "unchanged", "em": 0.0, "f1": 0.5},
        {"category": "edited", "em_outdated": 1.0, "f1_outdated": 1.0, "em_updated": 0.0, "f1_updated": 0.0,
         "logprob_answer1": -2.0, "logprob_answer2": -2.0, "prefers_updated": False},
        {"category": "edited", "em_outdated": 0.0, "f1_outdated": 0.0, "em_updated": 1.0, "f1_updated": 1.0,
         "logprob_answer1": -3.0, "logprob_answer2": -1.0, "prefers_updated": True},
    ]
    out = aggregate(items)
    unchanged = out["splits"]["unchanged"]
    assert (unchanged["em"]["n"], unchanged["em"]["value"], unchanged["f1"]["value"]) == (2, 0.5, 0.75)
    assert unchanged["em"] == proportion(1, 2)   # EM is 0/1 per item: a Wilson interval, as a fraction
    assert out["splits"]["new"]["em"]["value"] is None and out["splits"]["new"]["em"]["n"] == 0
    assert out["splits"]["outdated"]["em"]["value"] == 0.5 and out["splits"]["updated"]["f1"]["value"] == 0.5
    assert unchanged["em"]["interval"] == "wilson" and unchanged["f1"]["interval"] == "bootstrap"
    preference = out["edited_preference"]
    assert (preference["prefers_updated"]["n"], preference["prefers_updated"]["value"], preference["ties"]) == (2, 0.5, 1)


def test_card_metric_and_bad_options(runner, evolving, tmp_path):
    results = run_qa(runner, evolving, tmp_path / "card", QASettings(metric="card", max_new_tokens=2, limit=3))
    assert results["settings"]["metric"] == "card"
    assert len((tmp_path / "card" / "items.jsonl").read_text().splitlines()) == 3  # the seeded --limit sample
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="metric"):
        QASettings(metric="squad")
    with pytest.raises(UserError, match="--split"):
        run_qa(runner, evolving, tmp_path / "bad", QASettings(split="nope"))
