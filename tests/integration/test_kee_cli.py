"""`kbench evaluate kee` through the real CLI on a tiny random Llama and a hand-made dataset:
run folder contents, schema, metrics consistent with the rows, resume, user errors."""

from __future__ import annotations

import json

import polars as pl
import pytest
from kbench.evaluate.engine import validate
from kbench.metrics import kee as metrics
from kbench.metrics.uncertainty import proportion_of
from tests.conftest import run_kbench
from tests.question_rows import question_row
from tests.fixtures_models import tiny_causal_dir  # noqa: F401

FACTS = [("Paris", "France", "P36"), ("Berlin", "Germany", "P36"), ("Rome", "Italy", "P36"), ("Madrid", "Spain", "P36"),
         ("Warsaw", "Marie Curie", "P19"), ("Ulm", "Albert Einstein", "P19"), ("Florence", "Dante", "P19")]
TECHNIQUES = "temp0.7,caa,decore"


def write_dataset(root):
    rows = []
    for n, (obj, subject, relation) in enumerate(FACTS):
        question = f"What is the capital of {subject}?" if relation == "P36" else f"Where was {subject} born?"
        rows.append(question_row(id=f"f{n}", relation=relation, subject=subject, object=obj, answers=[obj, obj.upper()],
                                 prompt_cloze=f"{subject} is in", prompt_masked=f"{subject} is in [MASK].", question=question,
                                 frequency_bin="head" if n < 4 else "tail"))
    (root / "data" / "default").mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(root / "data" / "default" / "test.parquet")
    return root


@pytest.fixture(scope="module")
def finished_run(tiny_causal_dir, tmp_path_factory):  # noqa: F811
    root = tmp_path_factory.mktemp("kee")
    dataset = write_dataset(root / "dataset")
    args = ["evaluate", "kee", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--techniques", TECHNIQUES,
            "--k", "3", "--sweep-max", "4", "--out", str(root / "run"), "--top-k", "5", "--top-p", "0.9",
            "--technique-param", "decore.retrieval_heads=3", "--technique-param", "caa.multiplier=2"]
    first = run_kbench(*args)
    assert first.returncode == 0, first.stderr
    return root / "run", args, first


def test_run_folder_schema_and_rows(finished_run):
    run, _, first = finished_run
    results = json.loads((run / "results.json").read_text())
    validate(results, "results.v2.json")
    validate(results["metrics"], "results.kee.v2.json")
    metrics_block = results["metrics"]
    assert metrics_block["techniques"] == ["baseline", "temp0.7", "caa", "decore"]
    assert metrics_block["fitting_pool"] == "two folds of the items"
    assert set(metrics_block["per_frequency_bin"]) == {"head", "tail"}
    assert set(metrics_block["ranking_stability"]["0.7"]["sgr"]) == {"1", "2", "3", "4"}
    rows = pl.read_parquet(run / "items.parquet")
    assert rows.height == len(FACTS) * (4 + 2)   # 4 techniques + 2 partition temperatures
    assert sorted(rows["technique"].unique()) == ["baseline", "caa", "decore", "partition@0.7", "partition@1.2", "temp0.7"]
    assert (run / "prs.png").read_bytes()[:4] == b"\x89PNG" and (run / "gain_loss.png").read_bytes()[:4] == b"\x89PNG"
    assert "| caa |" in (run / "comparison.md").read_text() and "accuracy:caa" in first.stdout


def test_technique_settings_and_fits_are_recorded(finished_run):
    run, _, _ = finished_run
    results = json.loads((run / "results.json").read_text())
    details = results["metrics"]["technique_details"]
    assert details["temp0.7"]["params"] == {"temperature": 0.7, "votes": 10, "seed": 0, "top_k": 5, "top_p": 0.9}
    assert details["decore"]["params"]["retrieval_heads"] == 3 and details["caa"]["params"]["multiplier"] == 2.0
    assert results["metrics"]["technique_params"]["decore"] == details["decore"]["params"]
    assert results["settings"]["technique_params"] == {"decore": {"retrieval_heads": 3}, "caa": {"multiplier": 2}}
    assert (results["settings"]["top_k"], results["settings"]["top_p"]) == (5, 0.9)
    (decore,) = details["decore"]["fitted"]
    assert len(decore["masked_heads"]) == 3 and "retrieval score" in decore["selection"]
    folds = details["caa"]["fitted"]        # two folds of the 7 items, each fitted on the other
    assert sorted(f["pool"] for f in folds) == sorted(len(FACTS) - f["pool"] for f in folds)
    assert all(0 <= f["layer"] < 4 and f["select"] >= 1 for f in folds)


def test_metrics_match_the_rows(finished_run):
    run, _, _ = finished_run
    results = json.loads((run / "results.json").read_text())
    rows = pl.read_parquet(run / "items.parquet")

    def table(name, column):
        part = rows.filter(pl.col("technique") == name)
        return dict(zip(part["item_id"], part[column]))

    base, base_rank = table("baseline", "correct"), table("baseline", "gold_rank")
    overall = results["metrics"]["per_technique"]
    for name in ("temp0.7", "caa", "decore"):
        got = overall[name]
        correct = table(name, "correct")
        assert got["accuracy"] == proportion_of(list(correct.values()))
        assert got["gain"]["value"] == metrics.gain(base, correct)
        assert got["loss"]["value"] == metrics.loss(base, correct)
        prs = metrics.prs(base, correct, base_rank, table(name, "gold_rank")).as_dict()
        assert got["prs"]["n"] == prs["n"]
        assert {k: got["prs"][k]["value"] for k in ("improved", "tied", "worsened")} == {k: prs[k] for k in ("improved", "tied", "worsened")}
        shallow, deep = metrics.partition_failures(base, table("partition@0.7", "sample_correct"), 3)
        assert (got["beyond_sampling"]["0.7"]["sgr"]["value"], got["beyond_sampling"]["0.7"]["dgr"]["value"]) == \
            metrics.gain_rates(shallow, deep, correct)
        paired = got["vs_baseline"]
        assert (paired["b"], paired["c"]) == (sum(correct[i] and not base[i] for i in base), sum(base[i] and not correct[i] for i in base))
    # a random model answers nothing: no base success, so Loss is undefined -> null / "undefined"
    if not any(base.values()):
        assert overall["caa"]["loss"]["value"] is None
        assert "undefined" in (run / "comparison.md").read_text()


def test_rerun_resumes_without_recomputing(finished_run):
    run, args, _ = finished_run
    journal = (run / "journal.jsonl").read_bytes()
    before = json.loads((run / "results.json").read_text())
    again = run_kbench(*args)
    assert again.returncode == 0, again.stderr
    assert (run / "journal.jsonl").read_bytes() == journal     # no row was recomputed
    after = json.loads((run / "results.json").read_text())
    assert after["metrics"] == before["metrics"] and after["timing"]["items_computed"] == 0


def test_unknown_technique_is_a_user_error(tmp_path):
    result = run_kbench("evaluate", "kee", "--dataset", str(tmp_path), "--model", "x", "--techniques", "baseline,cot")
    assert result.returncode == 2
    assert "--techniques: unknown technique(s) cot; known techniques: activation_decoding, baseline" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_settings_a_model_cannot_run_fail_before_any_stage(tiny_causal_dir, tmp_path):  # noqa: F811
    dataset = write_dataset(tmp_path / "dataset")
    result = run_kbench("evaluate", "kee", "--dataset", str(dataset), "--model", str(tiny_causal_dir),
                        "--techniques", "iti", "--out", str(tmp_path / "run"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "ITI shifts K = 48 heads but the model has 16 heads in all" in result.stderr
    assert not (tmp_path / "run" / "journal.jsonl").exists()   # nothing ran, not even the baseline
    result = run_kbench("evaluate", "kee", "--dataset", str(dataset), "--model", str(tiny_causal_dir),
                        "--techniques", "caa", "--technique-param", "caa.held_out=1.5", "--out", str(tmp_path / "r2"))
    assert result.returncode == 2 and "technique 'caa': held_out: Input should be less than 1" in result.stderr
