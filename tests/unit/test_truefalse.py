"""`kbench evaluate truefalse` on a tiny random Llama over real LEFT statements."""

from __future__ import annotations

import json

import pytest

from kbench.errors import UserError
from kbench.metrics.uncertainty import difference_paired
from kbench.evaluate.engine import evaluate, validate
from kbench.evaluate.task import RunContext
from kbench.tasks.truefalse.task import ANSWERS, TrueFalse, TrueFalseSettings, prompt_text
from kbench.models.loading import load_model
from kbench.models.cached import CachedModel
from kbench.models.result_cache import ResultCache
from kbench.models.runner import ModelRunner
from kbench.read import ReadSettings, read_text
from tests.dataset_folders import left_dataset as build_left_dataset
from tests.fixtures_models import cached_model


@pytest.fixture(scope="module")
def left_dataset(shared_data, tmp_path_factory):
    return build_left_dataset(shared_data, tmp_path_factory.mktemp("left-tf"))


def run_truefalse(model, dataset, out, settings, base_runner=None) -> dict:
    models = {"base": base_runner} if base_runner is not None else {}
    return evaluate(TrueFalse(), RunContext(settings=settings, dataset=dataset, model=model, run_dir=out, models=models))


@pytest.fixture
def runner(tiny_causal, tmp_path):
    return cached_model(tiny_causal, tmp_path / "cache.sqlite", batch_size=8)


def test_prior_per_statement_and_pair_choice_and_resumes(runner, left_dataset, tmp_path):
    out = tmp_path / "prior"
    results = run_truefalse(runner, left_dataset, out, TrueFalseSettings(limit=6))
    validate(results, "results.v2.json")
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    overall = results["metrics"]["overall"]
    assert overall["accuracy"]["n"] == len(items) == 6 and results["headline"]["accuracy"] == overall["accuracy"]
    by_pair: dict[str, list[dict]] = {}
    for item in items:
        by_pair.setdefault(item["pair_id"], []).append(item)
    assert len(by_pair) == 3
    for pair in by_pair.values():
        # recompute the margins directly and check the pair decision
        scores = runner.score_answers([prompt_text(r["statement"], None, 150) for r in pair for _ in ANSWERS],
                                      [a for _ in pair for a in ANSWERS])
        margins = [scores[2 * i][0] - scores[2 * i + 1][0] for i in range(len(pair))]
        assert [r["margin"] for r in pair] == pytest.approx(margins)
        # the headline is LEFT's per-statement call (margin > 0 means true) ...
        assert [r["predicted"] for r in pair] == [m > 0 for m in margins]
        assert [r["correct"] for r in pair] == [(m > 0) == r["label"] for m, r in zip(margins, pair)]
        # ... and the within-pair forced choice is a second, named number
        assert [r["pair_choice"] for r in pair] == [m == max(margins) for m in margins]
        assert pair[0]["correct_pair_choice"] == pair[1]["correct_pair_choice"]  # right or wrong as a whole
    assert overall["accuracy"]["k"] == sum(i["correct"] for i in items)
    pair_outcomes = {i["pair_id"]: i["correct_pair_choice"] for i in items}   # one per pair, not per statement
    assert (overall["pair_choice_accuracy"]["k"], overall["pair_choice_accuracy"]["n"]) == (
        sum(pair_outcomes.values()), len(pair_outcomes)) == (overall["pair_choice_accuracy"]["k"], len(items) // 2)
    again = run_truefalse(runner, left_dataset, out, TrueFalseSettings(limit=6))
    assert again["timing"]["items_computed"] == 0 and again["metrics"] == results["metrics"]


def test_open_book_gold_uses_one_section_paragraph_per_pair(runner, left_dataset, tmp_path):
    import polars as pl

    results = run_truefalse(runner, left_dataset, tmp_path / "gold", TrueFalseSettings(setting="open-book", retriever="gold", limit=4))
    assert results["settings"]["retriever"] == "gold"
    items = pl.read_parquet(tmp_path / "gold" / "items.parquet")
    rows = {r["id"]: r for r in pl.read_parquet(left_dataset / "data" / "statements" / "dev.parquet").to_dicts()}
    for item in items.to_dicts():
        assert item["prompt"].startswith("Passage: ")
        assert item["context_id"] in rows[item["id"]]["paragraph_ids"]
    assert items.group_by("pair_id").agg(pl.col("context_id").n_unique())["context_id"].max() == 1


def test_closed_book_reports_before_and_after(tiny_causal_dir, left_dataset, tmp_path):
    ckpt = tmp_path / "ckpt"
    read_text(ReadSettings(model=str(tiny_causal_dir), text=str(left_dataset / "corpus" / "paragraphs.jsonl"), out=str(ckpt),
                           max_steps=2, seq_len=32, batch_size=2, lr=1e-3, only={"split": "dev"}))
    cache = ResultCache(tmp_path / "cache.sqlite")
    base = CachedModel(ModelRunner(load_model(str(tiny_causal_dir)), batch_size=8), cache)
    after = CachedModel(ModelRunner(load_model(str(ckpt)), batch_size=8), cache)
    results = run_truefalse(after, left_dataset, tmp_path / "closed",
                            TrueFalseSettings(setting="closed-book", limit=4, checkpoint=str(ckpt)),
                            base_runner=base)
    prior = run_truefalse(base, left_dataset, tmp_path / "prior", TrueFalseSettings(limit=4))
    ba = results["metrics"]["before_after"]
    assert ba["before_accuracy"] == prior["metrics"]["overall"]["accuracy"]
    assert ba["after_accuracy"] == results["metrics"]["overall"]["accuracy"]
    assert ba["delta"] == pytest.approx(ba["after_accuracy"]["value"] - ba["before_accuracy"]["value"])
    assert ba["paired_test"]["n_shared"] == 4
    after_ok, before_ok = ({i["id"]: i[f"{p}correct"] for i in map(json.loads, (tmp_path / "closed" / "items.jsonl").read_text().splitlines())}
                           for p in ("", "before_"))
    assert ba["difference"] == difference_paired(after_ok, before_ok) and ba["difference"]["paired"] is True
    assert ba["difference"]["value"] == pytest.approx(ba["delta"]) and ba["difference"]["n"] == 4
    assert results["headline"]["closed-book - prior"] == ba["difference"]
    validate(results["metrics"], "results.truefalse.v2.json")
    assert results["metrics"]["base_model"]["identity"] != results["model"]["identity"]


def test_open_book_minus_prior_is_paired_on_statements_across_runs(runner, left_dataset, tmp_path):
    from kbench.report.build import build_report
    from kbench.report.items import read_items
    from kbench.tasks.truefalse.report import setting_comparisons
    from kbench.report.runs import load_runs

    run_truefalse(runner, left_dataset, tmp_path / "prior", TrueFalseSettings(limit=4))
    run_truefalse(runner, left_dataset, tmp_path / "open", TrueFalseSettings(setting="open-book", retriever="gold", limit=6))
    runs = load_runs([tmp_path / "prior", tmp_path / "open"])
    (got,) = setting_comparisons(runs, [read_items(r.path) for r in runs])
    correct = {name: {i["id"]: i["correct"] for i in map(json.loads, (tmp_path / name / "items.jsonl").read_text().splitlines())}
               for name in ("prior", "open")}
    assert got["setting"] == "open-book-gold" and got["against"] == "prior"
    assert got["difference"] == difference_paired(correct["open"], correct["prior"])
    assert got["difference"]["n"] == 4 and got["difference"]["only_first"] == 2   # paired on the 4 shared statements
    assert got["paired_test"]["n_shared"] == 4
    build_report([tmp_path / "prior", tmp_path / "open"], tmp_path / "report")
    table = (tmp_path / "report" / "left_settings.md").read_text()
    assert "| open-book-gold - prior |" in table and "paired on statement ids" in table


def test_bad_settings_are_user_errors(runner, left_dataset, tmp_path):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="retriever"):
        TrueFalseSettings(setting="open-book")
    with pytest.raises(ValidationError, match="checkpoint"):
        TrueFalseSettings(setting="closed-book")
    with pytest.raises(UserError, match="no split"):
        run_truefalse(runner, left_dataset, tmp_path / "z", TrueFalseSettings(split="train"))

