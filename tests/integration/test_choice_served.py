"""The choice task refused on a served model without prompt log-probs (the stand-in's llama.cpp-like
model), with the reason and nothing written. Its agreement with in-process scoring on a server that
has them is tested on the real vLLM server (tests/slow/test_served_vllm.py)."""

from __future__ import annotations

from tests.conftest import run_kbench
from tests.dataset_folders import question_dataset
from tests.servers.fixtures import SECRET


def test_choice_refused_without_prompt_logprobs(standin, tiny_causal_dir, tmp_path):
    dataset = question_dataset(tmp_path / "ds", [
        {"id": "q0", "relation": "P36", "template": "The capital of [X] is [Y] .", "subject": "France", "object": "Paris",
         "answers": ["Paris"]},
        {"id": "q1", "relation": "P36", "template": "The capital of [X] is [Y] .", "subject": "Italy", "object": "Rome",
         "answers": ["Rome"]}])
    refused = run_kbench("evaluate", "choice", "--dataset", str(dataset), "--no-cache",
                         "--model", f"openai:{standin[0]};model=tiny-llamacpp;tokenizer={tiny_causal_dir}",
                         "--out", str(tmp_path / "refused"), env={"KBENCH_API_KEY": SECRET})
    assert refused.returncode == 2 and "task choice needs the capability 'loglikelihood'" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "refused" / "items.parquet").exists()
