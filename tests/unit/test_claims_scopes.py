"""Claim scopes over models (globs on the label, the model spec and the hub id's last part), the
non-superiority verdict ("not_greater") and the settings a claim requires."""

from __future__ import annotations

from kbench.claims.sets import Claim, in_scope, provides
from kbench.claims.verdicts import _verdict
from kbench.metrics.uncertainty import proportion


def claim(**fields) -> Claim:
    return Claim(id="X-1", statement="s", quote="q", source="here", task="kee", statistic="technique_above", **fields)


def test_a_scope_matches_the_label_the_spec_or_the_hub_ids_last_part():
    llama = claim(models=("*llama-3*",))
    assert in_scope(llama, "l8", {"model": "meta-llama/Meta-Llama-3-8B-Instruct"})  # the hub id's last part
    assert in_scope(llama, "Llama-3-8b", None)  # the label, case-insensitive
    assert not in_scope(llama, "olmo", {"model": "allenai/OLMo-2-1124-7B-Instruct"})
    assert in_scope(claim(), "anything", None)  # no models: every model
    but_qwen7 = claim(except_models=("*qwen2.5-7b*",))
    assert not in_scope(but_qwen7, "q7", {"model": "Qwen/Qwen2.5-7B-Instruct"})
    assert in_scope(but_qwen7, "q32", {"model": "Qwen/Qwen2.5-32B-Instruct"})


def test_non_superiority_is_decided_by_the_interval_against_the_margin():
    worse = {"estimate": {"value": -0.10, "ci_low": -0.14, "ci_high": -0.06, "n": 500}, "p_value": 1e-6}
    better = {"estimate": {"value": 0.20, "ci_low": 0.12, "ci_high": 0.28, "n": 500}, "p_value": 1e-6}
    close = {"estimate": {"value": 0.02, "ci_low": -0.03, "ci_high": 0.07, "n": 500}, "p_value": 0.4}
    no_better = claim(direction="not_greater", margin=0.05)
    assert _verdict(no_better, worse, None) == "supported"  # a significant drop supports "no better than"
    assert _verdict(no_better, better, None) == "contradicted"
    assert _verdict(no_better, close, None) == "inconclusive"  # the upper bound reaches past the margin


def test_continual_pretraining_is_a_kbench_read_checkpoint():
    assert provides("continual-pretraining", {"read": {"steps": 10}})
    assert not provides("continual-pretraining", {"model": "org/static"}) and not provides("continual-pretraining", None)


def test_left_1_no_improvement_after_reading_is_supported_by_a_drop(tmp_path):
    from kbench.tasks.truefalse.claims import closed_minus_prior
    from kbench.claims.sets import claim_set
    from kbench.report.runs import Run

    difference = {"value": -0.12, "ci_low": -0.18, "ci_high": -0.06, "n": 300, "interval": "newcombe-paired", "paired": True}
    closed = Run(
        tmp_path, {"task": "truefalse", "metrics": {"before_after": {"difference": difference, "paired_test": {"p_value": 1e-5}}}}
    )
    [left_1] = [c for c in claim_set("left").claims if c.id == "LEFT-1"]
    found = closed_minus_prior({"closed-book": closed})
    assert _verdict(left_1, found, None) == "supported"  # "challenged to show improvement": a drop is no improvement


def test_kola_1_is_a_size_trend_over_the_base_models(tmp_path):
    import json

    from kbench.claims.verdicts import test_suite
    from tests.integration.test_claims_cli import write_run

    cells, rows = {}, {}
    for i, name in enumerate(["b0", "b1", "b2", "b3", "b4", "b5-instruct"]):
        accuracy = proportion(20 + 10 * i if i < 5 else 5, 100)  # grows with size; the instruct model lowest
        write_run(
            tmp_path / "cells" / name, "extraction", name, {"maple_accuracy": accuracy}, {}, [{"id": "q0", "correct": True}]
        )
        cells[name] = {"model": name, "task": "facts", "dataset": "lama", "status": "done", "run_dir": f"cells/{name}"}
        rows[name] = {"model": f"org/{name}", "parameters": 10**8 * (i + 1)}
    suite = {"suite": {"name": "kola"}, "tasks": [{"task": "extraction", "name": "facts"}]}
    (tmp_path / "suite.json").write_text(
        json.dumps({"schema": "kbench.suite.v1", "suite": suite, "cells": cells, "models": rows})
    )
    [(_, results)] = test_suite(tmp_path, ["kola"])
    [kola_1] = [r for r in results if r.claim.id == "KoLA-1"]
    [trend] = kola_1.cells
    assert trend.model == "trend over 5 models" and trend.result["estimate"]["value"] == 1.0
    assert trend.result["p_value"] == 2 / 120 and trend.verdict == "supported"
    assert kola_1.outside == [("b5-instruct", "facts / lama")]  # about models without instruction tuning


def test_the_model_table_keeps_a_kbench_read_checkpoints_record(tmp_path):
    import json

    from kbench.suite.model_table import read_record

    record = {
        "kbench_read_version": 1,
        "base_model": {"name": "org/base", "identity": "x"},
        "text_sha256": ["0" * 64],
        "steps": 7,
    }
    (tmp_path / "read.json").write_text(json.dumps(record))
    kept = read_record(str(tmp_path))
    assert kept == {"base_model": {"name": "org/base", "identity": "x"}, "text_sha256": ["0" * 64], "steps": 7}
    assert provides("continual-pretraining", {"read": kept}) and read_record("smollm2-135m") is None
