"""Usage errors through the installed console script: the usage line, one reason, exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT


def _kbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "kbench"  # the console script pip installed beside this python
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "kbench"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}  # this checkout's code, whatever the script was installed from
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


EVAL = ("evaluate", "extraction", "--dataset", "runs/nothing", "--model", "tiny")


@pytest.mark.parametrize(
    ("args", "usage", "reason"),
    [
        (("nosuchcmd",), "Usage: kbench [OPTIONS] COMMAND", "No such command 'nosuchcmd'"),
        (("build",), "Usage: kbench build", "Missing argument"),
        (("evaluate", "nosuchtask"), "Usage: kbench evaluate [OPTIONS] COMMAND", "No such command 'nosuchtask'"),
        ((*EVAL, "--no-such-flag"), "Usage: kbench evaluate extraction", "No such option: --no-such-flag"),
        ((*EVAL, "--limit", "abc"), "Usage: kbench evaluate extraction", "Invalid value for '--limit'"),
    ],
)
def test_usage_error_is_a_usage_line_and_one_reason(args, usage, reason, tmp_path):
    result = _kbench(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert usage in result.stderr and reason in result.stderr
    (error_line,) = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert reason in error_line


@pytest.mark.parametrize("args", [(), ("evaluate",)])
def test_a_bare_group_prints_its_help(args, tmp_path):
    result = _kbench(*args, cwd=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "Commands" in result.stdout + result.stderr


def test_the_click_kinds_are_told_apart_by_class_name_in_either_click():
    from kbench.cli.main import _click_kind

    modules = ("click.exceptions", "typer._click.exceptions")  # whichever this environment has
    seen = 0
    for name in modules:
        try:
            exceptions = __import__(name, fromlist=["UsageError"])
        except ImportError:
            continue
        seen += 1
        assert _click_kind(exceptions.UsageError("bad")) == "usage"
        assert _click_kind(exceptions.BadParameter("bad")) == "usage"
    assert seen >= 1
    assert _click_kind(ValueError("not click")) is None
