"""to_questions: cloze, masked and question forms, answers, and the [Y]-before-[X] case."""

from __future__ import annotations

import json

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stages.to_questions import ToQuestions, load_question_templates
from kbench.io import load_schema
from kbench.errors import InputError


def run(tmp_path, rows, **params):
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0)
    return ToQuestions(ToQuestions.Params(**params), ctx).run(pl.LazyFrame(rows)).kept.collect().to_dicts()


def fact(**over):
    row = {"id": "1", "relation": "P19", "relation_label": "place of birth", "template": "[X] was born in [Y] .",
           "subject": "Alan Turing", "object": "London", "object_aliases": ["London, UK", "London"]}
    return row | over


def test_forms_for_a_regular_template(tmp_path):
    (row,) = run(tmp_path, [fact()])
    assert row["prompt_cloze"] == "Alan Turing was born in"
    assert row["prompt_masked"] == "Alan Turing was born in [MASK] ."
    assert row["question"] == "Where was Alan Turing born?"
    assert row["answers"] == ["London", "London, UK"]
    assert row["subject_aliases"] == [] and row["frequency"] is None and row["frequency_bin"] is None


def test_object_before_subject_uses_the_question(tmp_path):
    (row,) = run(tmp_path, [fact(relation="P1923", relation_label="participating team",
                                 template="[Y] participated in the [X] .", subject="2010 World Cup", object="Spain")])
    assert row["prompt_cloze"] == row["question"] == "Which team participated in 2010 World Cup?"
    assert row["prompt_masked"] == "[MASK] participated in the 2010 World Cup ."


def test_generic_question_and_special_characters(tmp_path):
    (row,) = run(tmp_path, [fact(relation="P9999", relation_label="favourite colour", subject=r"$1 \1 Ke$ha")])
    assert row["question"] == r"What is the favourite colour of $1 \1 Ke$ha?"
    assert row["prompt_cloze"] == r"$1 \1 Ke$ha was born in"


def test_custom_question_table(tmp_path):
    (tmp_path / "q.json").write_text(json.dumps({"P19": "Birthplace of [X]?"}))
    (row,) = run(tmp_path, [fact()], question_templates="q.json")
    assert row["question"] == "Birthplace of Alan Turing?"
    (tmp_path / "q.json").write_text(json.dumps({"P19": "Where born?"}))
    with pytest.raises(InputError, match=r"\[X\] exactly once") as info:
        run(tmp_path, [fact()], question_templates="q.json")
    assert info.value.key == "P19"


def test_shipped_table_covers_every_lama_relation(shared_data):
    templates = load_question_templates()
    relations = [json.loads(line)["relation"] for line in (shared_data / "lama_trex" / "relations.jsonl").open()]
    assert set(relations) <= set(templates) and "P569" in templates


def test_rows_satisfy_the_question_schema_once_split(tmp_path):
    from jsonschema import Draft202012Validator

    (row,) = run(tmp_path, [fact(subject_id="Q7251", object_id="Q84", source="trex", evidence_count=3)])
    Draft202012Validator(load_schema("question.v1.json")).validate(row | {"split": "test"})
