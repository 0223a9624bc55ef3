"""The tests' warm CLI (`tests/cli_forkserver.py`) gives what a cold `python -m kbench` gives: the
same exit code, stdout and stderr, for a success, a usage error and a user error (its children skip
the interpreter's module teardown, so this checks that nothing printed or returned is lost)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import cli_forkserver
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize("args", [
    ["recipes"],                                                     # exit 0, a table on stdout
    ["--log-level", "LOUD", "evaluate", "extraction"],               # exit 2, a usage line
    ["evaluate", "extraction", "--dataset", "no/such/dataset/folder", "--model", "smollm2-135m"],  # exit 2, a user error
])
def test_a_forked_call_answers_as_a_cold_one(args, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "KBENCH_TEST_FRESH_CLI"}
    warm = cli_forkserver.run(args, tmp_path, env, timeout=120)
    cold = subprocess.run([sys.executable, "-m", "kbench", *args], cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO_ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert warm.stdout or warm.stderr
