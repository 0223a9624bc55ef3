"""The shipped LEFT and EvolvingQA recipes through the CLI, and bad textbook input -> exit 2 with file:line."""

from __future__ import annotations

import json

import polars as pl

from tests.conftest import REPO_ROOT, run_kbench


def test_left_and_evolving_recipes_build(tmp_path):
    left = tmp_path / "left"
    proc = run_kbench("build", str(REPO_ROOT / "pipelines" / "left-textbook.toml"), "--out", str(left))
    assert proc.returncode == 0, proc.stderr
    stats = json.loads((left / "statement_stats.json").read_text())
    dev = pl.read_parquet(left / "data" / "statements" / "dev.parquet")
    test = pl.read_parquet(left / "data" / "statements" / "test.parquet")
    assert stats["statements"] == dev.height + test.height and stats["mean_word_overlap"] > 0.5
    assert dev["label"].sum() * 2 == dev.height  # balanced

    evolving = tmp_path / "evolving"
    proc = run_kbench("build", str(REPO_ROOT / "pipelines" / "evolving.toml"), "--out", str(evolving))
    assert proc.returncode == 0, proc.stderr
    edited = pl.read_parquet(evolving / "data" / "evolving" / "edited.parquet")
    assert edited.height > 0 and edited["synthetic_edit"].all()
    assert (edited["answer1"] != edited["answer2"]).all()
    assert (evolving / "snapshots" / "old.jsonl").is_file() and (evolving / "corpus" / "new_snapshot.jsonl").is_file()


def test_malformed_textbook_line_is_a_located_error(tmp_path, shared_data):
    book = tmp_path / "book"
    book.mkdir()
    (book / "paragraphs.jsonl").write_text((shared_data / "openstax_us_history" / "paragraphs.jsonl").read_text().splitlines()[0] + "\n")
    good = (shared_data / "openstax_us_history" / "review_mcq.jsonl").read_text().splitlines()[0]
    (book / "review_mcq.jsonl").write_text(good + "\n{not json\n")
    recipe = tmp_path / "left.toml"
    recipe.write_text(f'[pipeline]\nname = "left"\n\n[[stages]]\nstage = "load_textbook"\nbooks = ["{book}"]\n')
    proc = run_kbench("build", str(recipe), "--out", str(tmp_path / "run"))
    assert proc.returncode == 2
    assert "review_mcq.jsonl:2" in proc.stderr and "Traceback" not in proc.stderr
