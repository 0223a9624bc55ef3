"""MAPLE's LLM-judged steps (judge_domain, judge_single_answer) with a tiny random model: off by
default, robust to replies that hold no verdict, cached so a rerun asks the model nothing."""

from __future__ import annotations

import logging

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stages._llm_judge import parse_verdict
from kbench.construct.stages.judge_domain import JudgeDomain
from kbench.construct.stages.judge_single_answer import JudgeSingleAnswer

ROWS = pl.DataFrame({
    "subject": ["Allan Peiper", "Mont Blanc", "BRCA1", "Allan Peiper"],
    "relation": ["P19", "P17", "P703", "P19"],
    "relation_label": ["place of birth", "country", "found in taxon", "place of birth"],
    "object": ["Alexandra", "France", "Homo sapiens", "Alexandra"],
    "domain": ["sports", "geography", "science", "sports"],
})
YES_NO = JudgeDomain.verdicts


@pytest.mark.parametrize("reply, verdict", [
    ("Yes, it names where he was born.", "fits"),
    ("**No.** Too generic.", "mismatch"),
    ("  no", "mismatch"),
    ("Answer: yes", "fits"),
    ("", "unparseable"),
    ("The triplet is about a cyclist and therefore yes", "unparseable"),  # the verdict is too late to count
    ("zq !! 42 ##", "unparseable"),
])
def test_verdicts_are_read_from_the_first_words_or_recorded_unparseable(reply, verdict):
    assert parse_verdict(reply, YES_NO) == verdict


def _ctx(tmp_path, **options):
    return StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "c",
                        options=options)


def test_off_without_a_judge_model(tmp_path):
    out = JudgeDomain(JudgeDomain.Params(), _ctx(tmp_path)).run(ROWS.lazy())
    assert out.kept.collect().equals(ROWS) and out.rejected is None and out.details == {"ran": False}


@pytest.mark.parametrize("stage_cls", [JudgeDomain, JudgeSingleAnswer])
def test_a_tiny_model_judges_every_row_without_crashing(stage_cls, tmp_path, tiny_causal_dir, caplog):
    ctx = _ctx(tmp_path, judge_model=str(tiny_causal_dir))
    stage = stage_cls(stage_cls.Params(max_new_tokens=6), ctx)
    out = stage.run(ROWS.lazy())
    kept, rejected = out.kept.collect(), out.rejected.collect()
    verdict = f"{stage.name}_verdict"
    assert kept.height + rejected.height == ROWS.height
    assert set(kept[verdict]) | set(rejected[verdict]) <= {*stage.verdicts.values(), "unparseable"}
    # random weights reply with noise: recorded, with the judge's words, never a crash
    assert set(rejected["reason"]) <= {stage.drop_reason, "judge_unparseable"}
    assert rejected[f"{stage.name}_output"].dtype == pl.Utf8 and f"{stage.name}_output" not in kept.columns
    judge = out.details["judge"]
    assert judge["model"] == str(tiny_causal_dir) and judge["decoding"] == "greedy" and judge["prompt_form"] == "plain"
    assert sum(out.details["verdicts"].values()) == ROWS.height
    assert stage.run_options() == {"judge_model": str(tiny_causal_dir)}

    kept_all = stage_cls(stage_cls.Params(max_new_tokens=6, unparseable="keep"), ctx).run(ROWS.lazy())
    assert set(kept_all.rejected.collect()["reason"]) <= {stage.drop_reason}

    with caplog.at_level(logging.INFO, logger="kbench.construct.stages._llm_judge"):
        again = stage_cls(stage_cls.Params(max_new_tokens=6), ctx).run(ROWS.lazy())
    assert again.kept.collect().equals(kept)
    assert "3 distinct prompts, 3 answered from the result cache" in caplog.text  # the rerun asks the model nothing


def test_a_recipe_model_is_used_and_the_command_line_wins(tmp_path, tiny_causal_dir):
    out = JudgeDomain(JudgeDomain.Params(model=str(tiny_causal_dir), max_new_tokens=4), _ctx(tmp_path)).run(ROWS.lazy())
    assert out.details["judge"]["model"] == str(tiny_causal_dir)
    ctx = _ctx(tmp_path, judge_model=str(tiny_causal_dir))  # --judge-model beats the recipe's (absent) model
    out = JudgeDomain(JudgeDomain.Params(model=str(tmp_path / "absent"), max_new_tokens=4), ctx).run(ROWS.lazy())
    assert out.details["judge"]["model"] == str(tiny_causal_dir)


def test_missing_columns_name_the_stage(tmp_path, tiny_causal_dir):
    from kbench.errors import UserError

    with pytest.raises(UserError, match="judge_domain needs the column"):
        JudgeDomain(JudgeDomain.Params(), _ctx(tmp_path, judge_model=str(tiny_causal_dir))).run(ROWS.drop("domain").lazy())
