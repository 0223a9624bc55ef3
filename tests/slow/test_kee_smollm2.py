"""The KEE evaluation on the real SmolLM2-135M-Instruct: 12 LAMA T-REx facts (native language,
citizenship, country of origin, languages spoken; read from ../shared/data), the baseline and
one technique of each family: temperature sampling at 0.7 (sampling), GenRead (prompting;
RECITE's sampled runs cost more), CAA (steering), Activation Decoding (decoding). Checks the run
against the schema, the recorded baseline accuracy within a tolerance, and that each
intervention really changes the model's gold-token scores."""

from __future__ import annotations

import json

import polars as pl
import pytest

from kbench.construct.stages.to_questions import load_question_templates
import kbench
from kbench.tasks.kee.task import KeeSettings
from kbench.models.loading import load_model
from tests.fixtures_models import cached_model
from tests.question_rows import question_row

pytestmark = pytest.mark.slow
RELATIONS = ("P103", "P27", "P495", "P1412")
PER_RELATION = 3
# Measured on this fact set (SmolLM2-135M-Instruct Q4_1 GGUF de-quantised to fp32, CPU, chat
# prompt): 2 of 12 answered correctly (2026-12-02; 6 of the first 24, 13 of the first 48). One item of slack for
# other CPU kernels.
RECORDED_BASELINE_ACCURACY = 2 / 12
TOLERANCE = 1 / 12 + 1e-9


def lama_dataset(shared_data, root):
    templates = load_question_templates()
    rows = []
    for relation in RELATIONS:
        lines = (shared_data / "lama_trex" / "TREx" / f"{relation}.jsonl").read_text(encoding="utf-8").splitlines()
        for line in lines[:PER_RELATION]:
            fact = json.loads(line)
            rows.append(question_row(id=fact["uuid"], relation=relation, subject=fact["sub_label"],
                                     object=fact["obj_label"], answers=[fact["obj_label"]],
                                     question=templates[relation].replace("[X]", fact["sub_label"]),
                                     frequency_bin="head" if len(rows) % 2 else "tail"))
    (root / "data" / "default").mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(root / "data" / "default" / "test.parquet")
    return root


def test_kee_on_smollm2(shared_data, tmp_path):
    dataset = lama_dataset(shared_data, tmp_path / "dataset")
    runner = cached_model(load_model("smollm2-135m"), tmp_path / "cache.sqlite")
    settings = KeeSettings(techniques=("baseline", "temp0.7", "genread", "caa", "activation_decoding"), k=3, sweep_max=3,
                           temperatures=(0.7,))
    results = kbench.evaluate("kee", dataset=dataset, model=runner, out=tmp_path / "run", **settings.model_dump()).results   # validated against the schemas
    overall = results["metrics"]["per_technique"]
    print({name: {m: overall[name][m]["value"] for m in ("accuracy", "gain", "loss")} for name in settings.techniques})
    assert overall["baseline"]["accuracy"]["n"] == len(RELATIONS) * PER_RELATION
    assert overall["baseline"]["accuracy"]["value"] == pytest.approx(RECORDED_BASELINE_ACCURACY, abs=TOLERANCE)
    rows = pl.read_parquet(tmp_path / "run" / "items.parquet")
    base = rows.filter(pl.col("technique") == "baseline")["gold_logprob"].to_list()
    for name in ("genread", "caa", "activation_decoding"):
        changed = rows.filter(pl.col("technique") == name)["gold_logprob"].to_list()
        assert sum(abs(a - b) > 1e-4 for a, b in zip(base, changed)) >= len(base) // 2, name
        prs = overall[name]["prs"]
        if prs["n"]:
            assert sum(prs[label]["value"] for label in ("improved", "tied", "worsened")) == pytest.approx(1.0)
    votes = [json.loads(d)["samples"] for d in rows.filter(pl.col("technique") == "temp0.7")["detail"].to_list()]
    assert len(votes) == len(base) and all(len(v) == 10 for v in votes)   # majority vote over 10 samples
    assert sum(len(set(v)) > 1 for v in votes) >= len(votes) // 2          # sampling really varies the answers
    assert (tmp_path / "run" / "prs.png").exists() and (tmp_path / "run" / "comparison.md").exists()
