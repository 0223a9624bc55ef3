"""`kbench evaluate kee` through the real CLI on a tiny random Llama and a hand-made dataset:
run folder contents, schema, metrics consistent with the rows, resume, user errors."""

from __future__ import annotations

import json
import shutil

import polars as pl
import pytest
from kbench.evaluate.engine import validate
from kbench.tasks.kee import metrics
from kbench.metrics.uncertainty import proportion_of
from tests.conftest import run_kbench
from pathlib import Path
from tests.question_rows import question_row
from tests.fixtures_models import tiny_causal_dir  # noqa: F401

FACTS = [("Paris", "France", "P36"), ("Berlin", "Germany", "P36"), ("Rome", "Italy", "P36"), ("Madrid", "Spain", "P36"),
         ("Warsaw", "Marie Curie", "P19"), ("Ulm", "Albert Einstein", "P19"), ("Florence", "Dante", "P19")]
TECHNIQUES = "temp0.7,caa,decore"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


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
    assert details["temp0.7"]["params"] == {"temperature": 0.7, "votes": 10, "recovery_samples": 4, "seed": 0, "top_k": 5,
                                            "top_p": 0.9}
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
        assert got["gain"] == metrics.gain(base, correct)
        assert got["loss"] == metrics.loss(base, correct)
        # temperature sampling changes neither the prompt nor the weights: its PRS is undefined, not 100 % Tied
        expected_prs = metrics.prs_undefined(metrics.SAMPLING_PRS_UNDEFINED) if name == "temp0.7" else \
            metrics.prs(base, correct, base_rank, table(name, "gold_rank"))
        assert got["prs"] == expected_prs
        improved, worsened = (round(got["prs"][k]["value"] * got["prs"]["n"]) if got["prs"]["n"] else 0 for k in ("improved", "worsened"))
        assert (got["prs"]["sign_test"]["plus"], got["prs"]["sign_test"]["minus"]) == (improved, worsened)
        shallow, deep = metrics.partition_failures(base, table("partition@0.7", "sample_correct"), 3)
        # temp0.7 recovers an item when one of its first K = 3 seed-B samples is correct (kbench's reading)
        recovered = {i: any(s[:3]) for i, s in table(name, "sample_correct").items()} if name == "temp0.7" else correct
        assert (got["beyond_sampling"]["0.7"]["sgr"], got["beyond_sampling"]["0.7"]["dgr"]) == \
            metrics.gain_rates(shallow, deep, recovered)
        paired = got["vs_baseline"]
        assert (paired["b"], paired["c"]) == (sum(correct[i] and not base[i] for i in base), sum(base[i] and not correct[i] for i in base))
    # the shallow failures at each K of the sweep, from the same partition samples (MAPLE-26)
    by_k = results["metrics"]["shallow_by_k"]
    assert by_k and all(len(counts) == results["settings"]["sweep_max"] for counts in by_k.values())
    for t, counts in by_k.items():
        assert counts == metrics.shallow_counts(base, table(f"partition@{t}", "sample_correct"), results["settings"]["sweep_max"])
    # a random model answers nothing: no base success, so Loss is undefined -> null / "undefined"
    if not any(base.values()):
        assert overall["caa"]["loss"]["value"] is None
        assert "undefined" in (run / "comparison.md").read_text()


def test_pairwise_tests_bin_differences_and_stability_intervals(finished_run):
    run, _, first = finished_run
    results = json.loads((run / "results.json").read_text())
    m = results["metrics"]
    rows = pl.read_parquet(run / "items.parquet")
    correct = {t: dict(zip(part["item_id"], part["correct"])) for (t,), part in rows.group_by(["technique"])}
    pairs = [(t["first"], t["second"]) for t in m["pairwise_tests"]]
    assert pairs == [(a, b) for n, a in enumerate(m["techniques"]) for b in m["techniques"][n + 1:]]   # every pair, once
    caa_decore = next(t for t in m["pairwise_tests"] if (t["first"], t["second"]) == ("caa", "decore"))
    assert caa_decore["n_shared"] == len(FACTS)
    assert caa_decore["b"] == sum(correct["caa"][i] and not correct["decore"][i] for i in correct["caa"])
    head, tail = (m["per_frequency_bin"][b]["caa"]["accuracy"] for b in ("head", "tail"))
    difference = m["frequency_bin_differences"]["head - tail"]["caa"]["accuracy"]
    assert difference["paired"] is False and difference["interval"] == "newcombe"
    assert difference["value"] == pytest.approx(head["value"] - tail["value"])
    assert difference["ci_low"] <= difference["value"] <= difference["ci_high"]
    assert "head - torso" not in m["frequency_bin_differences"]   # the dataset has no torso bin
    tau = m["ranking_stability"]["0.7"]["sgr"]["3"]
    assert tau["interval"] == "bootstrap" and tau["resamples"] == 1000 and tau["seed"] == 0
    assert "accuracy head - tail" in results["headline"]
    table = (run / "comparison.md").read_text()
    assert "## Paired tests between techniques" in table and "| | temp0.7 | caa | decore |" in table
    assert "PRS sign test" in table and "head - tail" in table and "unpaired" in table
    assert "Kendall" in table and "deviates from MAPLE" in table
    assert "protocol: 8 deviations from maple-kee" in first.stderr and "decore-retrieval-heads" in first.stderr


def test_the_protocol_block_lists_each_departure_of_the_run(finished_run):
    run, _, _ = finished_run
    results = json.loads((run / "results.json").read_text())
    block = results["protocol"]
    assert block["name"] == "maple-kee" and block["faithful"] is False
    # --k 3, --sweep-max 4, --top-k/--top-p, a model without a chat template, CAA's folds of the few evaluated
    # items, caa.multiplier=2, decore's heads
    assert [d["id"] for d in block["deviations"]] == [
        "partition-k", "sweep-max", "sampling-truncation", "prompt-question-form", "fit-pool-folds", "caa-multiplier",
        "decore-synthetic-retrieval-heads", "decore-retrieval-heads"]
    details = results["metrics"]["technique_details"]
    assert details["baseline"]["deviations"] == [] and details["caa"]["deviations"] == ["caa-multiplier"]
    assert details["decore"]["deviations"] == ["decore-synthetic-retrieval-heads", "decore-retrieval-heads"]
    table = (run / "comparison.md").read_text()
    assert "**Protocol: 8 deviations from maple-kee**" in table and "- `decore-retrieval-heads`: 3 masked heads." in table


def test_maple_defaults_run_faithful(tiny_causal_dir, tmp_path):  # noqa: F811
    """A chat model, techniques that fit nothing at MAPLE's settings (K = 20, the 1..30 sweep, both
    temperatures): the block is empty and says faithful (CAA here would fit on folds of a few items,
    not MAPLE's 3,254 facts: `fit-pool-folds`); the interpretations are listed apart."""
    chat_model = tmp_path / "chat-model"
    shutil.copytree(tiny_causal_dir, chat_model)
    config = json.loads((chat_model / "tokenizer_config.json").read_text())
    config["chat_template"] = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    (chat_model / "tokenizer_config.json").write_text(json.dumps(config))
    dataset = write_dataset(tmp_path / "dataset")
    result = run_kbench("evaluate", "kee", "--dataset", str(dataset), "--model", str(chat_model),
                        "--techniques", "temp1.2,genread", "--out", str(tmp_path / "run"))
    assert result.returncode == 0, result.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["metrics"]["prompt_form"] == "chat"
    assert results["protocol"]["faithful"] is True and results["protocol"]["deviations"] == []
    assert "protocol: faithful to maple-kee" in result.stderr
    assert [i["id"] for i in results["protocol"]["interpretations"]] == [
        "sgr-recovery-rule", "matching-case", "vote-grouping", "prs-gold-token"]
    assert "  ~ sgr-recovery-rule (interpretation; MAPLE is silent): recovered when any" in result.stderr


@pytest.mark.parametrize("with_truthfulqa", [False, True])
def test_iti_records_its_probe_source(tiny_causal_dir, tmp_path, with_truthfulqa):  # noqa: F811
    data_root = tmp_path / "data"
    (data_root / "truthfulqa").mkdir(parents=True)
    if with_truthfulqa:
        (data_root / "truthfulqa" / "TruthfulQA.csv").write_bytes((FIXTURES / "truthfulqa" / "TruthfulQA.csv").read_bytes())
    dataset = write_dataset(tmp_path / "dataset")
    result = run_kbench("evaluate", "kee", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--techniques", "iti",
                        "--k", "2", "--sweep-max", "2", "--technique-param", "iti.heads=4", "--out", str(tmp_path / "run"),
                        env={"KBENCH_DATA_DIR": str(data_root)})
    assert result.returncode == 0, result.stderr
    iti = json.loads((tmp_path / "run" / "results.json").read_text())["metrics"]["technique_details"]["iti"]
    sources = {f["probe_source"] for f in iti["fitted"]}
    block = {d["id"]: d for d in json.loads((tmp_path / "run" / "results.json").read_text())["protocol"]["deviations"]}
    if with_truthfulqa:
        (fit,) = iti["fitted"]   # one fit on the file serves every item
        assert sources == {"truthfulqa"} and fit["pool"] == 6 and "TruthfulQA.csv" in fit["probe_data"]
        # the 6-question fixture is not TruthfulQA (817 questions): never reported as faithful
        assert iti["deviations"] == ["iti-probes-not-truthfulqa", "iti-heads"]
        assert "6 questions" in block["iti-probes-not-truthfulqa"]["kbench"]
    else:
        assert sources == {"benchmark train facts"} and len(iti["fitted"]) == 2   # two folds of the items
        assert iti["deviations"] == ["iti-probes-benchmark", "iti-heads"]
        assert "kbench data fetch truthfulqa" in block["iti-probes-benchmark"]["kbench"]
    assert block["iti-heads"]["kbench"] == "K = 4 shifted heads"


def test_iti_truthfulqa_required_but_missing_is_a_user_error(tiny_causal_dir, tmp_path):  # noqa: F811
    dataset = write_dataset(tmp_path / "dataset")
    result = run_kbench("evaluate", "kee", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--techniques", "iti",
                        "--technique-param", "iti.heads=4", "--technique-param", "iti.probe_data=truthfulqa",
                        "--out", str(tmp_path / "run"), env={"KBENCH_DATA_DIR": str(tmp_path)})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "kbench data fetch truthfulqa" in result.stderr


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
