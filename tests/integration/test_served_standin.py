"""A llama.cpp-like server (the stand-in tests/servers/vllm_like.py's `tiny-llamacpp`: echo without
prompt log-probs) detected by the probe and refused for log-likelihood, at the model and through the CLI.
What a vLLM server does (the probe, item-by-item agreement with in-process, the API key kept out of every
file and output) is tested against a real vLLM: tests/slow/test_served_vllm.py."""

from __future__ import annotations

import pytest

from kbench.errors import UserError
from kbench.models.cached import open_model
from kbench.models.interface import Capability, ModelSpec
from tests.conftest import run_kbench
from tests.servers.fixtures import SECRET


@pytest.fixture(scope="module")
def server(standin):
    return standin[0]


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("KBENCH_API_KEY", SECRET)
    return {"KBENCH_API_KEY": SECRET}


def test_llamacpp_like_echo_is_detected_and_refused(server, tiny_causal_dir, api_key):
    served = open_model(ModelSpec(name=f"openai:{server};model=tiny-llamacpp;tokenizer={tiny_causal_dir}",
                                  backend="openai"), cache=None)
    assert served.describe()["weights"]["probe"]["echo"] == "text_only"  # the prompt text, not its log-probs
    assert served.info.capabilities == {Capability.GENERATE}
    with pytest.raises(UserError, match="'loglikelihood'.*without its log-probs.*backends that have it: hf, openai"):
        served.score_answers(["Paris is the capital of"], [" France"])
    with pytest.raises(UserError, match="'rank_top_k'"):
        served.rank_first_token(["Paris is the capital of"], [" France"])


def test_truefalse_on_a_llamacpp_like_server_exits_2_naming_the_capability(server, tiny_causal_dir, built_left, tmp_path,
                                                                           api_key):
    done = run_kbench("evaluate", "truefalse", "--dataset", str(built_left), "--limit", "2", "--no-cache", "--out",
                      str(tmp_path / "run"), "--model", f"openai:{server};model=tiny-llamacpp;tokenizer={tiny_causal_dir}",
                      env=api_key)
    assert done.returncode == 2 and "'loglikelihood'" in done.stderr and "Traceback" not in done.stderr
