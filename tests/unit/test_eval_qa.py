"""`kbench evaluate qa` on a tiny random Llama over an evolving dataset built from inline snapshots."""

from __future__ import annotations

import json

import pytest

from kbench.build.recipe import load_recipe
from kbench.build.runner import run_recipe
from kbench.errors import UserError
from kbench.evaluate.qa import QASettings, aggregate, run_qa
from kbench.evaluate.rundir import validate_results
from kbench.metrics.qa import official_em, official_f1
from kbench.models.loading import load_model
from kbench.models.result_cache import ResultCache
from kbench.models.runner import ModelRunner
from tests.fixtures_models import tiny_causal_dir  # noqa: F401

OLD = [{"subject": s, "subject_id": f"Q{i + 1}", "relation": "P108", "object": o, "object_id": f"Q{100 + i}"}
       for i, (s, o) in enumerate([("Ada", "Acme"), ("Bob", "Globex"), ("Cy", "Initech"), ("Dee", "Hooli")])]
NEW = OLD[:2] + [{**OLD[2], "object": "Paris", "object_id": "Q90"}, {**OLD[3], "object": "Berlin", "object_id": "Q64"},
                 {"subject": "Eve", "subject_id": "Q9", "relation": "P108", "object": "Umbrella", "object_id": "Q200"}]


@pytest.fixture(scope="module")
def evolving(tmp_path_factory):
    root = tmp_path_factory.mktemp("evo")
    for name, rows in (("old", OLD), ("new", NEW)):
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = root / "evo.toml"
    recipe.write_text('[pipeline]\nname = "evo"\nconfig = "evolving"\n\n'
                      f'[[stages]]\nstage = "evolving_snapshots"\nold = "{root / "old.jsonl"}"\nnew = "{root / "new.jsonl"}"\n\n'
                      '[[stages]]\nstage = "write_dataset"\nschema_name = "qa_item.v1.json"\n')
    run_recipe(load_recipe(recipe), root / "run")
    return root / "run"


@pytest.fixture
def runner(tiny_causal_dir, tmp_path):
    return ModelRunner(load_model(str(tiny_causal_dir)), batch_size=4, cache=ResultCache(tmp_path / "cache.sqlite"))


def test_slices_scores_and_preference(runner, evolving, tmp_path):
    out = tmp_path / "qa"
    results = run_qa(runner, evolving, out, QASettings(max_new_tokens=4))
    validate_results(results, "results.qa.v1.json")
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert {s: results["splits"][s]["n"] for s in results["splits"]} == {"unchanged": 2, "new": 1, "outdated": 2, "updated": 2}
    for item in items:
        if item["category"] == "edited":
            assert item["em_outdated"] == official_em(item["prediction"], item["answer1"])
            assert item["f1_updated"] == official_f1(item["prediction"], item["answer2"])
            assert item["prefers_updated"] == (item["logprob_answer2"] > item["logprob_answer1"])
            # the log-likelihoods are the runner's, for " " + answer after the prompt
            (lp1, _), (lp2, _) = runner.score_answers([item["prompt"]] * 2, [" " + item["answer1"], " " + item["answer2"]])
            assert (item["logprob_answer1"], item["logprob_answer2"]) == pytest.approx((lp1, lp2))
    edited = [i for i in items if i["category"] == "edited"]
    assert results["edited_preference"]["prefers_updated"] == sum(i["prefers_updated"] for i in edited) / 2
    again = run_qa(runner, evolving, out, QASettings(max_new_tokens=4))
    assert again["timing"]["items_computed"] == 0 and again["splits"] == results["splits"]


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
    assert out["splits"]["unchanged"] == {"n": 2, "em": 50.0, "f1": 75.0}
    assert out["splits"]["new"] == {"n": 0, "em": None, "f1": None}
    assert out["splits"]["outdated"]["em"] == 50.0 and out["splits"]["updated"]["f1"] == 50.0
    assert out["edited_preference"] == {"n": 2, "prefers_updated": 0.5, "ties": 1}


def test_card_metric_and_bad_options(runner, evolving, tmp_path):
    results = run_qa(runner, evolving, tmp_path / "card", QASettings(metric="card", max_new_tokens=2, limit=3))
    assert results["settings"]["metric"] == "card"
    assert len((tmp_path / "card" / "items.jsonl").read_text().splitlines()) == 3  # the seeded --limit sample
    with pytest.raises(UserError, match="metric"):
        run_qa(runner, evolving, tmp_path / "bad", QASettings(metric="squad"))
