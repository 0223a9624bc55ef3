"""A server process killed mid-run and restarted: the run stops with one clear line (exit 2) and the
rerun's items.parquet is byte-identical to an undisturbed run's. This uses the vLLM-like stand-in
(tests/servers/vllm_like.py, the tiny random Llama): killing and restarting a real vLLM costs two more
engine starts, which the CI time does not allow. The fault proxy's faults (429 + Retry-After, 500s,
time-outs, resets, truncated JSON, a server that goes away) are injected in front of a real vLLM:
tests/slow/test_served_vllm.py."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, run_kbench
from tests.dataset_folders import facts_about
from tests.servers import free_port, stop, vllm_like
from tests.servers.fixtures import SECRET

FACTS = facts_about("France", "Germany", "Italy", "Spain", "Dante", "Marie Curie", "Toyota", "Nokia", "Sony", "Picasso")
KEY = {"KBENCH_API_KEY": SECRET}


def _args(facts: Path, port: int, out: Path, options: str = "") -> list[str]:
    # MAPLE extraction: a greedy generation and a rank request per item
    return ["evaluate", "extraction", "--dataset", str(facts), "--max-new-tokens", "3", "--no-cache", "--out", str(out),
            "--model", f"openai:http://127.0.0.1:{port}/v1;model=tiny{options}"]


@pytest.fixture(scope="module")
def clean(standin, facts, tmp_path_factory) -> bytes:
    out = tmp_path_factory.mktemp("clean") / "run"
    done = run_kbench(*_args(facts, standin[1], out), env=KEY)
    assert done.returncode == 0, done.stderr
    return (out / "items.parquet").read_bytes()


def test_a_killed_server_restarted_resumes_to_the_same_bytes(tiny_causal_dir, facts, clean, tmp_path):
    port, log, out = free_port(), tmp_path / "server.log", tmp_path / "run"
    with vllm_like(tiny_causal_dir, port, log, api_key_env="KBENCH_STANDIN_KEY") as server:
        run = subprocess.Popen([sys.executable, "-m", "kbench", *_args(facts, port, out, ";retries=2")], cwd=REPO_ROOT,
                               env={**__import__("os").environ, **KEY}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        while log.read_text().count("POST /v1/completions") < 12 and run.poll() is None:
            time.sleep(0.05)  # polling the server's request log: kill it once the run is under way
        stop(server)
        _, stderr = run.communicate(timeout=300)
    assert run.returncode == 2 and "did not answer" in stderr and "Traceback" not in stderr
    with vllm_like(tiny_causal_dir, port, log, api_key_env="KBENCH_STANDIN_KEY"):
        resumed = run_kbench(*_args(facts, port, out), env=KEY)
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "items.parquet").read_bytes() == clean
