"""A real llama.cpp server (opt-in: KBENCH_LLAMA_SERVER = the `llama-server` binary; README "Served
models" says how to build it) serving SmolLM2's packaged Q4_1 GGUF, started by Popen on 127.0.0.1,
awaited on /health and stopped by its PID. kbench talks to it with the converted folder's tokenizer
(`tokenizer=`), so the same prompt tokens go in as in-process.

- The probe's verdicts, capability by capability: generation, token-id prompts, 20 top log-probs
  keyed by token id (the chat layout's `id`), `echo` ignored, no `prompt_logprobs`, `max_tokens: 0`
  generating a token.
- Generation-based extraction through the CLI runs and its correctness agrees with in-process greedy
  runs, and the first-token ranks within the top 20 agree with in-process ranks, within what the
  quantisation allows (see TOLERANCE: greedy texts diverge where the model is unsure).
- A task that needs prompt log-probs (`evaluate truefalse`) exits 2 naming the missing echo.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from kbench.models.cached import open_model
from kbench.models.interface import Capability, ModelSpec
from kbench.models.loading import resolve_packaged_gguf, resolve_source
from tests.conftest import run_kbench
from tests.servers import free_port, running

BINARY = os.environ.get("KBENCH_LLAMA_SERVER", "")
pytestmark = pytest.mark.skipif(not Path(BINARY).is_file(), reason="KBENCH_LLAMA_SERVER names no llama-server binary")

FACTS = 12
# llama.cpp multiplies the Q4_1 blocks with 8-bit quantised activations; in-process runs the same Q4_1
# weights dequantised to float32 with float32 activations. Measured 2026-12-02: where SmolLM2 is unsure
# (birth years, clubs) near-ties flip and the continuation diverges: 23/32 identical 8-token cloze answers
# (bench/llamacpp_generation.py), 2/12 identical MAPLE predictions. Correctness (mostly wrong at 135M either
# way) agrees but for at most 2 of 12. A gold token's log-prob moves by 0.01-0.05 nats near the top
# (" Paris": -0.2484 served, -0.2581 float32) and by 0.37 nats for " Florence" at rank 5: 0.5 allowed.
TOLERANCE = {"differing_correct": 2, "logprob_nats": 0.5}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(tokenizer folder, API root) of a running llama.cpp server of the packaged SmolLM2 GGUF."""
    folder, _ = resolve_source("smollm2-135m")  # the same GGUF converted once into $KBENCH_MODEL_CACHE
    port = free_port()
    command = [BINARY, "-m", str(resolve_packaged_gguf("smollm2-135m")), "--host", "127.0.0.1", "--port", str(port),
               "-t", "1", "-c", "4096", "-np", "4", "--alias", "smollm2", "--no-webui"]
    with running(command, port, tmp_path_factory.mktemp("llamacpp") / "server.log"):
        yield folder, f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
def served(server):
    folder, url = server
    return open_model(ModelSpec(name=f"openai:{url};tokenizer={folder}", backend="openai", use_cache=False))


def test_probe_verdicts(served):
    probe = served.describe()["weights"]["probe"]
    assert probe["generate"] and probe["token_id_prompts"] and probe["sampling_varies"]
    assert probe["echo"] == "ignored" and not probe["echo_prompt_logprobs"] and not probe["prompt_logprobs"]
    assert probe["top_logprobs"] == 20 and probe["token_id_keys"] and probe["prompt_only"] is False
    assert served.info.capabilities == {Capability.GENERATE, Capability.RANK_TOP_K}
    assert "llama.cpp's server does not implement echo" in dict(served.info.missing)["loglikelihood"]
    assert served.generate(["The capital of France is"], 0) == [""]  # never sent: the server would generate one


def test_first_token_ranks_agree_within_the_top_20(served):
    local = open_model(ModelSpec(name="smollm2-135m", use_cache=False))
    prompts = ["The capital of France is", "The capital of Germany is", "Dante was born in", "Toyota is a company from"]
    golds = [" Paris", " Berlin", " Florence", " Japan"]
    remote, here = served.rank_first_token(prompts, golds), local.rank_first_token(prompts, golds)
    print("ranks served vs in-process:", remote, here)
    for (rank, logprob), (exact, exact_logprob) in zip(remote, here):
        if exact <= 10:  # far from the top-20 edge, where quantisation cannot push it out
            assert rank == exact and logprob == pytest.approx(exact_logprob, abs=TOLERANCE["logprob_nats"])
        assert rank is None or abs(rank - exact) <= 2


def evaluate(task: str, dataset: Path, model: str, out: Path, *args: str):
    return run_kbench("evaluate", task, "--dataset", str(dataset), "--model", model, "--seed", "1", "--no-cache",
                      "--out", str(out), *args)


def test_cli_extraction_agrees_with_in_process(server, built_lama, tmp_path):
    folder, url = server
    limit = ("--limit", str(FACTS))
    done = evaluate("extraction", built_lama, f"openai:{url};tokenizer={folder}", tmp_path / "served", *limit)
    assert done.returncode == 0, done.stderr
    done = evaluate("extraction", built_lama, "smollm2-135m", tmp_path / "local", *limit)
    assert done.returncode == 0, done.stderr
    served, local = (pl.read_parquet(tmp_path / w / "items.parquet") for w in ("served", "local"))
    joined = served.join(local, on="id", suffix="_local")
    assert joined.height == FACTS
    same = joined.filter(pl.col("prediction") == pl.col("prediction_local")).height
    print(f"extraction: {same}/{FACTS} identical predictions;", joined.select("prediction", "prediction_local").rows())
    assert joined.filter(pl.col("correct") != pl.col("correct_local")).height <= TOLERANCE["differing_correct"]
    assert served["gold_rank"].is_not_null().any()  # ranks from the top 20 (None beyond it, never guessed)


def test_prompt_logprob_task_refused_naming_echo(server, built_left, tmp_path):
    folder, url = server
    done = evaluate("truefalse", built_left, f"openai:{url};tokenizer={folder}", tmp_path / "run", "--limit", "2")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "'loglikelihood'" in done.stderr and "ignored `echo`" in done.stderr and "llama.cpp" in done.stderr
