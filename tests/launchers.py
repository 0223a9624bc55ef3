"""Starting real processes from tests: a free local port, and `accelerate launch` on CPU processes."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def accelerate_launch(args: list[str], env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    """`accelerate launch --multi_gpu --num_processes 2 -m kbench ARGS` on CPUs (gloo), on a free port
    (never 29500, which another run may hold)."""
    launcher = shutil.which("accelerate", path=os.path.dirname(sys.executable))
    command = [launcher, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--main_process_port", str(free_port()), "--mixed_precision", "no", "--dynamo_backend", "no",
               "-m", "kbench", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT,
                          env={**os.environ, **env, "ACCELERATE_USE_CPU": "1"})
