"""MAPLE's LLM-judged steps with the real SmolLM2-135M-Instruct (chat template, greedy) on a handful
of rows: the replies parse into verdicts, drops carry their reason and the judge's words, and the
details name the model. Asserts well-formedness, not that a 135M model judges well."""

from __future__ import annotations

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stages.judge_domain import JudgeDomain
from kbench.construct.stages.judge_single_answer import JudgeSingleAnswer

pytestmark = pytest.mark.slow

ROWS = pl.DataFrame({
    "subject": ["Allan Peiper", "Mont Blanc", "BRCA1", "Paris", "Douglas Adams", "Barack Obama"],
    "relation_label": ["place of birth", "country", "found in taxon", "capital of", "child", "position held"],
    "object": ["Alexandra", "France", "Homo sapiens", "France", "Polly Adams", "President of the United States"],
    "domain": ["sports", "geography", "science", "geography", "arts", "politics"],
})


@pytest.mark.parametrize("stage_cls", [JudgeDomain, JudgeSingleAnswer])
def test_smollm2_judges_a_handful_of_rows(stage_cls, tmp_path):
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "c",
                       options={"judge_model": "smollm2-135m"})
    stage = stage_cls(stage_cls.Params(max_new_tokens=12), ctx)
    out = stage.run(ROWS.lazy())
    kept, rejected = out.kept.collect(), out.rejected.collect()
    verdict = f"{stage.name}_verdict"
    assert kept.height + rejected.height == ROWS.height
    verdicts = kept[verdict].to_list() + rejected[verdict].to_list()
    assert set(verdicts) <= {*stage.verdicts.values(), "unparseable"}
    assert sum(v != "unparseable" for v in verdicts) >= ROWS.height // 2  # an instruct model answers the question asked
    assert all(text for text in rejected[f"{stage.name}_output"].to_list())
    assert out.details["judge"]["model"] == "smollm2-135m" and out.details["judge"]["prompt_form"] == "chat"
    [entry] = stage.deviations(out.details)  # the protocol block names the judge and its prompt form
    assert entry.id == f"{stage.slug}-stand-in" and "`smollm2-135m`" in entry.kbench and "chat prompt" in entry.kbench
