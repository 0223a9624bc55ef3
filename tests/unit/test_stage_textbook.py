"""LEFT statements on the real OpenStax review questions, through the real build runner."""

from __future__ import annotations

import json

import polars as pl
import pytest

from kbench.construct.recipe import load_recipe
from kbench.construct.runner import run_recipe
from kbench.construct.stages.textbook_statements import fill_blanks, is_meta_option, make_statement, pick_wrong_option, word_overlap

BOOKS = ("openstax_us_history", "openstax_american_government_3e")


@pytest.fixture(scope="module")
def built(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("left")
    books = ", ".join(json.dumps(str(shared_data / b)) for b in BOOKS)
    recipe = root / "left.toml"
    recipe.write_text(
        f'[pipeline]\nname = "left"\nseed = 13\nconfig = "statements"\n\n'
        f'[[stages]]\nstage = "load_textbook"\nid = "load"\nbooks = [{books}]\n\n'
        f'[[stages]]\nstage = "textbook_statements"\nid = "statements"\n\n'
        f'[[stages]]\nstage = "write_dataset"\nschema_name = "statement.v1.json"\n'
    )
    run_dir = root / "run"
    run_recipe(load_recipe(recipe), run_dir)
    questions = [json.loads(line) for b in BOOKS for line in (shared_data / b / "review_mcq.jsonl").read_text().splitlines()]
    statements = pl.concat([pl.read_parquet(p) for p in sorted((run_dir / "data" / "statements").glob("*.parquet"))])
    return run_dir, questions, statements


def test_every_keyed_question_gives_one_true_and_one_false(built):
    run_dir, questions, statements = built
    rejected = pl.read_parquet(run_dir / "rejected" / "statements.parquet")
    by_pair = {pid: grp for (pid,), grp in statements.group_by("pair_id")}
    keyed = [q for q in questions if q["answer_index"] is not None]
    assert len(keyed) == 279 + 105
    meta = {f"{b}/{e}" for b, e in rejected.filter(pl.col("reason") == "answer_refers_to_other_options")
            .select("book", "exercise_id").iter_rows()}
    for q in keyed:
        pid = f"{q['book']}/{q['exercise_id']}"
        if pid in meta:
            assert pid not in by_pair
            assert is_meta_option(q["answer_text"])
            continue
        pair = by_pair[pid]
        assert sorted(pair["label"].to_list()) == [False, True]
        true_row = pair.filter(pl.col("label")).row(0, named=True)
        false_row = pair.filter(~pl.col("label")).row(0, named=True)
        assert true_row["option"] == q["answer_text"]
        assert false_row["option"] in q["options"] and false_row["option"] != q["answer_text"]
        assert true_row["statement"] != false_row["statement"]
    assert len(meta) <= 15  # "all of the above" / "both B and C" keys only
    unkeyed = sum(q["answer_index"] is None for q in questions)
    assert rejected.filter(pl.col("reason") == "no_answer_key").height == unkeyed == 92


def test_word_overlap_is_high_and_reported(built):
    run_dir, _, statements = built
    assert statements["word_overlap"].min() >= 0.15
    mean = statements.filter(pl.col("label"))["word_overlap"].mean()
    assert mean >= 0.55
    stats = json.loads((run_dir / "statement_stats.json").read_text())
    assert stats["mean_word_overlap"] == pytest.approx(mean, abs=1e-4)
    assert stats["pairs"] * 2 == statements.height


def test_splits_chapters_and_gold_paragraphs(built):
    run_dir, _, statements = built
    assert set(statements.filter(pl.col("split") == "dev")["chapter"].to_list()) <= set(range(1, 9))
    assert statements.filter(pl.col("split") == "test")["chapter"].min() == 9
    with_paragraphs = statements.filter(pl.col("paragraphs").list.len() > 0)
    assert with_paragraphs.height >= 0.95 * statements.height
    corpus = [json.loads(line) for line in (run_dir / "corpus" / "paragraphs.jsonl").read_text().splitlines()]
    ids = {c["para_id"] for c in corpus}
    assert all(pid in ids for pids in statements["paragraph_ids"].to_list() for pid in pids)


def test_dataset_opens_with_datasets(built):
    datasets = pytest.importorskip("datasets")
    run_dir, _, statements = built
    ds = datasets.load_dataset(str(run_dir))
    assert set(ds) == {"dev", "test"}
    assert ds["dev"].num_rows + ds["test"].num_rows == statements.height


def test_rewrite_rules_on_hand_cases():
    assert make_statement("Which country established the first colonies in the Americas?", "Spain") == (
        "Spain established the first colonies in the Americas.", "subject_question")
    assert make_statement("Which of the following best describes federalism?", "shared power")[0] == (
        "Shared power best describes federalism.")
    # do-support: the wh-word is the object, so the documented fallback is used
    assert make_statement("What important power did the government lack?", "taxation") == (
        "What important power did the government lack? Taxation.", "fallback")
    assert fill_blanks("________ was the first state to vote by mail.", "Oregon") == "Oregon was the first state to vote by mail."
    assert fill_blanks("It ended in ________.", "the war.") == "It ended in the war."
    assert fill_blanks("During ________ people wanted ________ daily.", "WWII; maps") == "During WWII people wanted maps daily."
    assert fill_blanks("During ________ people wanted ________ daily.", "WWII") is None


def test_wrong_option_is_seeded_and_never_meta():
    options = ["a", "b", "c", "all of the above"]
    picks = {pick_wrong_option(options, 0, seed, "x") for seed in range(40)}
    assert picks == {"b", "c"}
    assert pick_wrong_option(options, 0, 7, "x") == pick_wrong_option(options, 0, 7, "x")
    assert pick_wrong_option(["a", "both B and C"], 0, 1, "x") is None
    assert word_overlap("The war ended.", "the war ended") == 1.0
