"""Real local servers for the served-model tests: vLLM itself (`vllm_server`, installed into its own
cached venv by scripts/vllm_setup.sh), a vLLM-like stand-in (`vllm_like.py`, only where no real server
can show a behaviour), a fault proxy (`fault_proxy.py`), and `transformers serve`; each started by
`Popen` on 127.0.0.1 at a free port, awaited on `/health` (polled, never a fixed sleep) and stopped
by its PID (`running`)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.launchers import REPO_ROOT, free_port


def wait_healthy(url: str, process: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)  # a poll interval, not a wait for readiness
    raise RuntimeError(f"{url} did not answer within {timeout} s")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def running(command: list[str], port: int, log: Path, env: dict | None = None, health: str = "/health"):
    """Start `command` (listening on `port`), wait for its health URL, yield the process, stop it."""
    with open(log, "ab") as out:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT,
                                   env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})
    try:
        wait_healthy(f"http://127.0.0.1:{port}{health}", process)
        yield process
    finally:
        stop(process)


def vllm_like(folder: Path, port: int, log: Path, *, name: str = "tiny", api_key_env: str | None = None,
              chat_template: Path | None = None):
    """Serves `name` (vLLM-like), `name`-llamacpp (echo without prompt log-probs) and `name`-chat (chat only)."""
    command = [sys.executable, "-m", "tests.servers.vllm_like", "--port", str(port), "--model-folder", str(folder),
               "--served-name", name]
    command += ["--api-key-env", api_key_env] if api_key_env else []
    return running(command + (["--chat-template", str(chat_template)] if chat_template else []), port, log)


#: Set to 1 by a developer without the vLLM venv: the real-vLLM tests skip. CI never sets it: there they fail loudly.
SKIP_VLLM = "KBENCH_SKIP_VLLM"


def vllm_python() -> Path:
    """The vLLM venv's python, installed on first use (scripts/vllm_setup.sh: cached machine-wide, idempotent).
    Without it the calling test fails, naming the cause; it skips only when $KBENCH_SKIP_VLLM is 1."""
    import pytest

    if os.environ.get(SKIP_VLLM) == "1":
        pytest.skip(f"{SKIP_VLLM}=1: real-vLLM tests skipped")
    done = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "vllm_setup.sh")], capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        pytest.fail(f"vLLM venv not installed (scripts/vllm_setup.sh exit {done.returncode}; set {SKIP_VLLM}=1 "
                    f"to skip these tests): {done.stderr.strip()[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1]) / "bin" / "python"


def vllm_server(folder: Path, port: int, log: Path, *, name: str = "smollm2", api_key: str | None = None,
                max_logprobs: int = -1):
    """A real vLLM OpenAI-compatible server of a transformers folder (float32, eager: healthy in ~26 s on
    one thread). `max_logprobs` -1: full-vocabulary log-probs may be asked (LAMA's common vocabulary)."""
    command = [str(vllm_python()), "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder),
               "--served-model-name", name, "--dtype", "float32", "--host", "127.0.0.1", "--port", str(port),
               "--max-model-len", "2048", "--max-logprobs", str(max_logprobs), "--seed", "0", "--enforce-eager",
               # every request computes its whole prompt, as in-process: a rerun's floats do not depend on what the
               # prefix cache held (a knowledge benchmark's prompts share little beyond the template anyway)
               "--no-enable-prefix-caching"]
    env = {"VLLM_CPU_OMP_THREADS_BIND": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "PYTHONPATH": ""}
    return running(command + (["--api-key", api_key] if api_key else []), port, log, env=env)


def fault_proxy(upstream_port: int, port: int, log: Path, *, faults: str, every: int, fail_after: int | None = None,
                rewrite: str | None = None):
    command = [sys.executable, "-m", "tests.servers.fault_proxy", "--port", str(port), "--upstream", str(upstream_port),
               "--faults", faults, "--every", str(every)] + (["--rewrite", rewrite] if rewrite else [])
    return running(command + (["--fail-after", str(fail_after)] if fail_after is not None else []), port, log)


def transformers_serve(folder: Path, port: int, log: Path):
    launcher = shutil.which("transformers", path=os.path.dirname(sys.executable))
    command = [launcher, "serve", "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--dtype", "float32",
               str(folder)]
    return running(command, port, log)


__all__ = ["free_port", "running", "stop", "vllm_python", "vllm_server", "vllm_like", "fault_proxy", "transformers_serve"]
