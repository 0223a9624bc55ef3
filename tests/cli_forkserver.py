"""`kbench` CLI calls for the tests, forked from one warm interpreter instead of started cold.

A cold `python -m kbench evaluate ...` spends about 8 CPU-seconds importing torch and transformers'
model code before it reads its first argument; the test suite makes a few hundred such calls, which
was most of CI's time on 2 cores. This server imports them once (and nothing else: no torch op runs,
so no thread pool exists to be copied half-locked into a fork) and forks a child per call. The child
is a CLI run as a user starts it: its own argv (`python -m kbench ...`), working directory,
environment, stdin from /dev/null, stdout and stderr to files, its own process group (a time-out
kills what it started), the interpreter's normal exit (non-daemon threads joined, atexit handlers,
flushes) but for the module teardown (~1.7 s in a fork of this server, for nothing a run writes), and its
exit code or signal as `subprocess` reports it (tests/unit/test_cli_forkserver.py compares it with cold runs).

A call that sets a variable read at import time (Hugging Face, torch, thread counts, Python's own) to
another value than the test process has runs as a fresh subprocess instead; so does every call when
`KBENCH_TEST_FRESH_CLI=1`. Tests that watch a process's imports or signals start their own process.

Server: `python -m tests.cli_forkserver SOCKET` (one per pytest worker, started on first use, and started
again when the test process's own import-time variables change).
Protocol: one JSON request line per connection; the server answers the child's pid, then its
`os.waitpid` status, one line each.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Imported once by the server: what a CLI call would otherwise import cold (about 8 CPU-s).
PRELOAD = ("torch", "transformers", "transformers.modeling_utils", "transformers.models.llama.modeling_llama",
           "transformers.models.bert.modeling_bert", "transformers.tokenization_utils_fast")
#: Environment variables read at import time by what PRELOAD imports: a call that changes one runs cold.
IMPORT_TIME_PREFIXES = ("HF_", "HUGGING", "TRANSFORMERS", "TOKENIZERS", "TORCH", "PYTORCH", "CUDA", "OMP_", "MKL_",
                        "PYTHON", "LD_", "KMP_")


def _import_time_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_PREFIXES)}


# ---------------------------------------------------------------------------------------------- server
def serve(path: str) -> dict | None:
    """Accept requests until the parent (the pytest worker) is gone. Returns the request in a forked
    child (which then runs it); returns None in the server when it is time to stop."""
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    waiting: dict[int, socket.socket] = {}  # child pid -> the connection that waits for its status
    while os.getppid() == parent:
        ready, _, _ = select.select([listener], [], [], 0.1)
        if ready:
            conn, _ = listener.accept()
            request = json.loads(conn.makefile("r", encoding="utf-8").readline())
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                return request
            conn.sendall(f"{pid}\n".encode())
            waiting[pid] = conn
        for pid in list(waiting):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                conn = waiting.pop(pid)
                try:
                    conn.sendall(f"{status}\n".encode())
                except OSError:  # the test gave up on it (a time-out) and went away
                    pass
                conn.close()
    return None


def run_request(request: dict) -> None:
    """In the forked child: become `python -m kbench ARGS` run from `cwd` with `env`."""
    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for fd, name, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY | os.O_TRUNC),
                            (2, request["stderr"], os.O_WRONLY | os.O_TRUNC)):
        opened = os.open(name, flags)
        os.dup2(opened, fd)
        os.close(opened)
    sys.path[0] = request["cwd"]  # as `python -m` puts the working directory first
    sys.argv = ["-m", *request["args"]]
    exit_code: list[int | None] = [1]  # an uncaught exception: the interpreter prints it and exits 1
    atexit.register(_exit_without_teardown, exit_code)  # registered first: runs after every other exit handler
    try:
        runpy.run_module("kbench", run_name="__main__", alter_sys=True)
        exit_code[0] = 0
    except SystemExit as stop:  # the interpreter prints a message code and exits with the number
        exit_code[0] = 0 if stop.code is None else stop.code if isinstance(stop.code, int) else 1
        raise
    except KeyboardInterrupt:  # the interpreter ends by SIGINT after its exit handlers
        exit_code[0] = None
        raise


def _exit_without_teardown(exit_code: list[int | None]) -> None:
    """The interpreter's exit up to its last step: non-daemon threads were joined and the exit handlers
    ran; only the module teardown is left, which in a child of the warm server costs ~1.7 s (it touches
    every object of torch and transformers, copying the pages the fork shared). Flush and end here."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    if exit_code[0] is None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(exit_code[0] if exit_code[0] is not None else 1)


# ---------------------------------------------------------------------------------------------- client
_server: tuple[subprocess.Popen, str, dict[str, str]] | None = None


def _start(import_env: dict[str, str]) -> str:
    """The socket of a running server whose import-time environment is `import_env` (this process's):
    started on first use, and again when this process's own environment has moved since (torch, for one,
    sets TORCHINDUCTOR_CACHE_DIR in the process that first uses it)."""
    global _server
    if _server is not None and (_server[0].poll() is not None or _server[2] != import_env):
        _stop(*_server[:2])
        _server = None
    if _server is None:
        folder = tempfile.mkdtemp(prefix="kbench-cli-")
        path = os.path.join(folder, "socket")
        process = subprocess.Popen([sys.executable, "-m", "tests.cli_forkserver", path], cwd=Path(__file__).parents[1],
                                   env=dict(os.environ), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=None)
        _server = (process, path, import_env)  # before the wait: an interrupted start is still stopped at exit
        deadline = time.monotonic() + 300
        while not os.path.exists(path):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the CLI fork server did not start (exit {process.poll()})")
            time.sleep(0.05)
    return _server[1]


def _stop(process: subprocess.Popen, path: str) -> None:
    process.kill()
    process.wait()
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


@atexit.register
def _stop_at_exit() -> None:
    if _server is not None:
        _stop(*_server[:2])


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """`python -m kbench ARGS` as `subprocess.run(..., capture_output=True, text=True, timeout=...)` gives it."""
    command = [sys.executable, "-m", "kbench", *args]
    if os.environ.get("KBENCH_TEST_FRESH_CLI") == "1" or sys.platform != "linux":
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    wanted = _import_time_env(env)
    if wanted != _import_time_env(os.environ):  # this call sets one for itself: a cold start reads it
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    path = _start(wanted)
    with tempfile.TemporaryDirectory(prefix="kbench-call-") as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        out.touch()
        err.touch()
        request = {"args": list(args), "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err)}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            conn.sendall((json.dumps(request) + "\n").encode())
            answers = conn.makefile("r", encoding="utf-8")
            pid = int(answers.readline())
            conn.settimeout(timeout)
            try:
                status = int(answers.readline())
            except TimeoutError:
                os.killpg(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(command, timeout, out.read_bytes(), err.read_bytes()) from None
            except BaseException:  # the test itself was interrupted: its CLI run goes too
                os.killpg(pid, signal.SIGKILL)
                raise
        return subprocess.CompletedProcess(command, os.waitstatus_to_exitcode(status),
                                           out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8"))


if __name__ == "__main__":
    for name in PRELOAD:
        __import__(name)
    gc.freeze()  # what is imported stays shared with the children: their collections never touch (copy) it
    request = serve(sys.argv[1])
    if request is not None:
        run_request(request)
