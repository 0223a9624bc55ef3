"""The choice task on a served model (the vLLM-like stand-in computing with the tiny Llama): the
same predictions and scores as in-process, and a server without prompt log-probs refused with the
reason."""

from __future__ import annotations

import polars as pl
import pytest

from tests.conftest import run_kbench
from tests.dataset_folders import question_dataset
from tests.fixtures_models import tiny_causal_dir  # noqa: F401
from tests.servers.fixtures import SECRET, standin  # noqa: F401

FACTS = [("P36", "France", "Paris"), ("P36", "Germany", "Berlin"), ("P36", "Italy", "Rome"), ("P19", "Dante", "Florence"),
         ("P19", "Marie Curie", "Warsaw")]
TEMPLATES = {"P36": "The capital of [X] is [Y] .", "P19": "[X] was born in [Y] ."}


def test_choice_served_agrees_with_in_process_and_refuses_without_logprobs(standin, tiny_causal_dir, tmp_path):
    server, env = standin[0], {"KBENCH_API_KEY": SECRET}
    dataset = question_dataset(tmp_path / "ds", [
        {"id": f"q{i}", "relation": r, "template": TEMPLATES[r], "subject": s, "object": o, "answers": [o]}
        for i, (r, s, o) in enumerate(FACTS)])
    base = ["evaluate", "choice", "--dataset", str(dataset), "--no-cache"]
    # the tokenizer folder gives the served model the same start token as the in-process one
    served = run_kbench(*base, "--model", f"openai:{server};model=tiny;tokenizer={tiny_causal_dir}",
                        "--out", str(tmp_path / "served"), env=env)
    assert served.returncode == 0, served.stderr
    local = run_kbench(*base, "--model", str(tiny_causal_dir), "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    ours, theirs = (pl.read_parquet(tmp_path / name / "items.parquet").sort("id") for name in ("local", "served"))
    assert ours["prediction"].to_list() == theirs["prediction"].to_list()
    for a, b in zip(ours["scores"].to_list(), theirs["scores"].to_list()):
        assert a == pytest.approx(b, abs=1e-3)
    refused = run_kbench(*base, "--model", f"openai:{server};model=tiny-llamacpp;tokenizer={tiny_causal_dir}",
                         "--out", str(tmp_path / "refused"), env=env)
    assert refused.returncode == 2 and "task choice needs the capability 'loglikelihood'" in refused.stderr
    assert "Traceback" not in refused.stderr
