"""Exported tasks under the real harnesses agree item by item with `kbench evaluate`.

The packaged SmolLM2-135M-Instruct (the safetensors folder kbench converts it to) on CPU, offline:
* lm-eval (`lm_eval` CLI) on the exported LAMA task, 50 facts (the seeded --limit sample), against
  `kbench evaluate extraction` on the same facts: the same answers, MAPLE correctness and exact match;
* lm-eval on the exported LEFT task, 10 statements, against `kbench evaluate truefalse`: the same
  margins (to float noise), per-statement correctness and the pair forced-choice accuracy;
* Inspect (`hf/local`) on the exported LAMA task, 6 facts, against `kbench evaluate extraction
  --prompt chat`: Inspect renders the same messages with the model's chat template.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import run_kbench

pytestmark = pytest.mark.slow
FACTS, STATEMENTS, CHAT_FACTS, SEED = 50, 10, 6, 0


@pytest.fixture(scope="module")
def model_folder() -> str:
    from kbench.models.loading import resolve_source

    folder, _ = resolve_source("smollm2-135m")
    return str(folder)


def offline_env(tmp_path) -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
            "TOKENIZERS_PARALLELISM": "false"}


def run_lm_eval(task_dir, task: str, model: str, out, tmp_path) -> dict:
    """lm_eval as a user runs it; returns {doc id: logged sample}."""
    cmd = [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={model},dtype=float32",
           "--device", "cpu", "--batch_size", "64", "--tasks", task, "--include_path", str(task_dir),
           "--log_samples", "--output_path", str(out)]
    proc = subprocess.run(cmd, check=False, env=offline_env(tmp_path), capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (samples_file,) = out.rglob(f"samples_{task}_*.jsonl")
    return {s["doc"]["id"]: s for s in map(json.loads, samples_file.read_text().splitlines())}


def kbench_items(run_dir) -> dict:
    return {r["id"]: r for r in map(json.loads, (run_dir / "items.jsonl").read_text().splitlines())}


def test_lmeval_extraction_agrees_with_kbench(built_lama, model_folder, tmp_path):
    task_dir = tmp_path / "task"
    proc = run_kbench("export", "lm-eval", str(built_lama), "--out", str(task_dir), "--limit", str(FACTS), "--seed", str(SEED))
    assert proc.returncode == 0, proc.stderr
    proc = run_kbench("evaluate", "extraction", "--dataset", str(built_lama), "--model", "smollm2-135m",
                      "--limit", str(FACTS), "--seed", str(SEED), "--out", str(tmp_path / "kbench"))
    assert proc.returncode == 0, proc.stderr
    ours = kbench_items(tmp_path / "kbench")
    theirs = run_lm_eval(task_dir, "kbench_lama_test_cloze", model_folder, tmp_path / "lm-eval", tmp_path)
    assert set(theirs) == set(ours) and len(ours) == FACTS
    differ = [(i, ours[i]["prediction"], theirs[i]["filtered_resps"][0]) for i in ours
              if ours[i]["prediction"] != theirs[i]["filtered_resps"][0].strip()]
    assert not differ, differ[:5]
    assert all(bool(theirs[i]["maple_acc"]) == ours[i]["correct"] for i in ours)
    assert all(bool(theirs[i]["exact_match"]) == ours[i]["exact"] for i in ours)
    print(f"lm-eval vs kbench on {FACTS} facts: identical; MAPLE {sum(r['correct'] for r in ours.values())}/{FACTS}")


def test_lmeval_truefalse_agrees_with_kbench(built_left, model_folder, tmp_path):
    task_dir = tmp_path / "task"
    proc = run_kbench("export", "lm-eval", str(built_left), "--out", str(task_dir), "--limit", str(STATEMENTS))
    assert proc.returncode == 0, proc.stderr
    proc = run_kbench("evaluate", "truefalse", "--dataset", str(built_left), "--model", "smollm2-135m",
                      "--limit", str(STATEMENTS), "--out", str(tmp_path / "kbench"))
    assert proc.returncode == 0, proc.stderr
    ours = kbench_items(tmp_path / "kbench")
    theirs = run_lm_eval(task_dir, "kbench_left_dev", model_folder, tmp_path / "lm-eval", tmp_path)
    assert set(theirs) == set(ours) and len(ours) == STATEMENTS
    for i, item in ours.items():
        assert theirs[i]["pair_acc"][2] == pytest.approx(item["margin"], abs=1e-3)
        assert bool(theirs[i]["acc"]) == item["correct"]
    results = json.loads(next((tmp_path / "lm-eval").rglob("results_*.json")).read_text())["results"]["kbench_left_dev"]
    kbench_results = json.loads((tmp_path / "kbench" / "results.json").read_text())["metrics"]["overall"]
    assert results["pair_acc,none"] == pytest.approx(kbench_results["pair_choice_accuracy"]["value"])
    assert results["acc,none"] == pytest.approx(kbench_results["accuracy"]["value"])


def test_inspect_agrees_with_kbench_chat_prompt(built_lama, model_folder, tmp_path):
    proc = run_kbench("export", "inspect", str(built_lama), "--out", str(tmp_path / "kbench_lama.py"),
                      "--limit", str(CHAT_FACTS), "--seed", str(SEED))
    assert proc.returncode == 0, proc.stderr
    proc = run_kbench("evaluate", "extraction", "--dataset", str(built_lama), "--model", "smollm2-135m", "--prompt", "chat",
                      "--limit", str(CHAT_FACTS), "--seed", str(SEED), "--out", str(tmp_path / "kbench"))
    assert proc.returncode == 0, proc.stderr
    ours = kbench_items(tmp_path / "kbench")
    script = ("import json, sys\nfrom inspect_ai import eval as inspect_eval\n"
              "(log,) = inspect_eval('kbench_lama.py', model='hf/local', display='none', log_dir='logs',\n"
              f"    model_args={{'model_path': {model_folder!r}, 'do_sample': False, 'device': 'cpu'}})\n"
              "assert log.status == 'success', log.error\n"
              "print(json.dumps({s.id: [s.scores['maple_match'].answer, s.scores['maple_match'].value] for s in log.samples}))\n")
    proc = subprocess.run([sys.executable, "-c", script], check=False, cwd=tmp_path, env=offline_env(tmp_path),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(theirs) == set(ours)
    for i, item in ours.items():
        answer, value = theirs[i]
        assert answer == item["prediction"]
        assert value == {"maple": "C" if item["correct"] else "I", "exact": "C" if item["exact"] else "I"}
