"""The session's vLLM-like stand-in on the tiny random Llama, shared by the served-model test
modules (tests/conftest.py registers this module as a plugin: a test asks for `standin` by name)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.servers import free_port, vllm_like

SECRET = "sk-kbench-test-7f3a9c0e1d"  # the key the stand-in demands; must show up in no file or output
#: the chat template the stand-in applies on /v1/chat/completions (the tiny folder has none: `--prompt auto` stays plain)
CHAT_TEMPLATE = Path(__file__).resolve().parents[1] / "fixtures" / "served" / "chatml.jinja"


@pytest.fixture(scope="session")
def standin(tiny_causal_dir, tmp_path_factory):
    """(API root URL, port) of a running stand-in that serves "tiny" and "tiny-llamacpp"."""
    port = free_port()
    log = tmp_path_factory.mktemp("standin") / "server.log"
    os.environ["KBENCH_STANDIN_KEY"] = SECRET
    with vllm_like(tiny_causal_dir, port, log, api_key_env="KBENCH_STANDIN_KEY", chat_template=CHAT_TEMPLATE):
        yield f"http://127.0.0.1:{port}/v1", port
