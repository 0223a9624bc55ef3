"""A real two-node Ray cluster on this machine, for tests: `ray start --head` and a second
`ray start --address`, on 127.0.0.1 with ports of their own and a private temp dir.

Each node is a `ray start --block` process we started; stopping a node kills that process and
every process below it, by PID (Ray's workers run in sessions of their own, so not by process
group), never with `ray stop`, which would stop every Ray on the machine. Token authentication
is off (RAY_AUTH_MODE=disabled): the cluster only listens to this machine's tests.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.launchers import free_port

RAY = Path(sys.executable).parent / "ray"
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def _own_ports() -> list[str]:
    ports = ["--node-manager-port", "--object-manager-port", "--metrics-export-port", "--dashboard-agent-listen-port",
             "--dashboard-agent-grpc-port", "--runtime-env-agent-port"]
    return [arg for flag in ports for arg in (flag, str(free_port()))]


class Node:
    def __init__(self, args: list[str], log: Path):
        self.log = log
        self.proc = subprocess.Popen([str(RAY), "start", *args, "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
                                      "--disable-usage-stats", "--block", *_own_ports()],
                                     env=ENV, stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)

    def wait_started(self, deadline: float) -> None:
        while "Ray runtime started" not in self.log.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray node did not start:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL the node's `ray start` process and all its descendants (raylet, workers, agents)."""
        import psutil

        try:
            procs = [psutil.Process(self.proc.pid)]
            procs += procs[0].children(recursive=True)
        except psutil.NoSuchProcess:
            procs = []
        for proc in procs:
            try:
                proc.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        self.proc.wait()
        psutil.wait_procs(procs, timeout=10)


class TwoNodeCluster:
    def __init__(self):
        self.temp = Path(tempfile.mkdtemp(prefix="kbray", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        self.head = Node(["--head", "--port", str(port), "--temp-dir", str(self.temp / "h"), "--include-dashboard",
                          "false", "--ray-client-server-port", str(free_port())], self.temp / "head.log")
        self.worker = None
        deadline = time.monotonic() + 240
        try:
            self.head.wait_started(deadline)
            self.worker = Node(["--address", self.address, "--temp-dir", str(self.temp / "w")], self.temp / "worker.log")
            self.worker.wait_started(deadline)
        except BaseException:
            self.stop()  # a node that did not start leaves none running behind it
            raise

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.kill()
        self.head.kill()
        shutil.rmtree(self.temp, ignore_errors=True)
