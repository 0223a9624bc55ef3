"""`kbench check` on the tiny random Llama, in-process and served by the vLLM-like stand-in, and with
failures planted by the fault proxy in front of the stand-in: a server that ignores `echo`, and one
that samples where greedy was asked. Each planted failure exits 1 and names its check; check.json
validates against schemas/check.v1.json. The real vLLM's checks (agreement on the LAMA probe, a tokenizer of
another model): tests/slow/test_served_vllm.py and tests/slow/test_vllm_backend.py."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from kbench.io import load_schema
from tests.conftest import run_kbench
from tests.dataset_folders import question_dataset
from tests.fixtures_models import tiny_causal_dir  # noqa: F401
from tests.servers import fault_proxy, free_port
from tests.servers.fixtures import SECRET, standin  # noqa: F401

KEY = {"KBENCH_API_KEY": SECRET}
FACTS = [("P36", "France", "Paris"), ("P36", "Germany", "Berlin"), ("P36", "Italy", "Rome"), ("P19", "Dante", "Florence"),
         ("P495", "Toyota", "Japan"), ("P495", "Nokia", "Finland")]
OWN_CHECKS = ["capabilities", "greedy_argmax", "logprobs", "repeat", "batch_size", "request_order", "seeded_samples",
              "chat_template"]


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    return question_dataset(tmp_path_factory.mktemp("facts"), [
        {"id": f"q{i}", "relation": r, "subject": s, "object": o, "answers": [o], "prompt_cloze": f"{s} is in"}
        for i, (r, s, o) in enumerate(FACTS)])


def check(facts, out, *model_args: str):
    """Run `kbench check` with a cache of the test's own: the latest check of a model is kept in the cache, where
    every later run of that model would find it."""
    done = run_kbench("check", *model_args, "--dataset", str(facts), "--limit", str(len(FACTS)), "--out", str(out),
                      env={**KEY, "KBENCH_CACHE": str(out / "cache")})
    report = json.loads((out / "check.json").read_text()) if (out / "check.json").is_file() else None
    return done, report


def by_name(report: dict) -> dict:
    return {c["name"]: c for c in report["checks"]}


def test_in_process_against_the_served_standin_passes_and_validates(facts, standin, tiny_causal_dir, tmp_path):
    served = f"openai:{standin[0]};model=tiny"
    done, report = check(facts, tmp_path, "--model", str(tiny_causal_dir), "--against", served)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not list(Draft202012Validator(load_schema("check.v1.json")).iter_errors(report))
    checks = by_name(report)
    assert list(checks) == [*OWN_CHECKS, f"capabilities:{served}", f"agreement:{served}"] and report["failed"] == []
    assert {c["verdict"] for c in checks.values()} <= {"pass", "warn", "skip"}
    assert checks["chat_template"]["verdict"] == "skip"  # the tiny folder has no chat template
    agreement = checks[f"agreement:{served}"]["measured"]
    assert agreement["identical_answers"] == agreement["n"] == len(FACTS) and agreement["answer_flips"] == []
    assert agreement["max_logprob_delta"] < 1e-3
    assert "agreement" in done.stdout and "identical answers 6/6" in done.stdout  # the table prints the evidence
    run = run_kbench("evaluate", "extraction", "--dataset", str(facts), "--model", str(tiny_causal_dir), "--limit", "2",
                     "--no-cache", "--out", str(tmp_path / "run"), env={"KBENCH_CACHE": str(tmp_path / "cache")})
    assert run.returncode == 0, run.stderr[-3000:]
    block = json.loads((tmp_path / "run" / "results.json").read_text())["model"]["check"]
    assert block["created"] == report["created"] and block["failed"] == [] and block["verdicts"]["repeat"] == "pass"


def test_a_server_that_ignores_echo_fails_the_capabilities_check(facts, standin, tiny_causal_dir, tmp_path):
    """As the model checked, and as the model it is checked against (`--against`)."""
    port = free_port()
    served = f"openai:http://127.0.0.1:{port}/v1;model=tiny"
    with fault_proxy(standin[1], port, tmp_path / "proxy.log", faults="", every=10**6, rewrite="drop-echo"):
        done, report = check(facts, tmp_path / "out", "--model", served)
        against, their_report = check(facts, tmp_path / "against", "--model", str(tiny_causal_dir), "--against", served)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "capabilities" in report["failed"] and "ignored" in by_name(report)["capabilities"]["evidence"]
    assert "failed: capabilities" in done.stdout
    assert against.returncode == 1 and their_report["failed"] == [f"capabilities:{served}"]
    assert f"failed: capabilities:{served}" in against.stdout


def test_a_backend_that_samples_where_greedy_was_asked_fails_determinism(facts, standin, tmp_path):
    port = free_port()
    with fault_proxy(standin[1], port, tmp_path / "proxy.log", faults="", every=10**6, rewrite="sampling"):
        done, report = check(facts, tmp_path / "out", "--model", f"openai:http://127.0.0.1:{port}/v1;model=tiny")
    assert done.returncode == 1, done.stderr[-3000:]
    assert {"repeat", "batch_size", "request_order"} <= set(report["failed"])
    assert by_name(report)["repeat"]["measured"]["answer_flips"]
    assert by_name(report)["greedy_argmax"]["verdict"] != "pass"  # the tiny model samples mostly partial characters: skip


def test_a_server_whose_log_probs_contradict_its_answers_fails_and_is_refused_for_log_prob_tasks(facts, standin, tmp_path):
    port = free_port()
    served = f"openai:http://127.0.0.1:{port}/v1;model=tiny"
    with fault_proxy(standin[1], port, tmp_path / "proxy.log", faults="", every=10**6, rewrite="flip-logprobs"):
        done, report = check(facts, tmp_path / "out", "--model", served)
        assert done.returncode == 1, done.stderr[-3000:]
        assert "logprobs" in report["failed"] and "above 0" in by_name(report)["logprobs"]["evidence"]
        run = run_kbench("evaluate", "extraction", "--protocol", "lama", "--dataset", str(facts), "--model", served, "--limit",
                         "2", "--no-cache", "--out", str(tmp_path / "run"),
                         env={**KEY, "KBENCH_CACHE": str(tmp_path / "out" / "cache")})
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "failed self-consistency (logprobs)" in run.stderr


def test_an_unknown_threshold_is_one_line_exit_2(tmp_path):
    done = run_kbench("check", "--model", "smollm2-135m", "--threshold", "flips=0.1", "--out", str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--threshold 'flips=0.1'" in done.stderr and "flip_fail" in done.stderr
