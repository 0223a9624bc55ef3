"""The README's quickstart runs in CI as written: each command of its block, in order, in a fresh folder, through the
real CLI (the packaged SmolLM2, the LAMA probe built from the source data). One command is too slow for CI as
written: the packaged CPU claims suite `claims-cpu` runs long on two cores, so the test gives `kbench suite run`
a two-model toy suite (tests/suite_folders.py) with a claim set instead, under the same name and folder; the README
says so beside the block."""

from __future__ import annotations

import shlex

import pytest

from tests.conftest import REPO_ROOT, run_kbench
from tests.suite_folders import tiny_suite

pytestmark = pytest.mark.slow


def quickstart() -> list[list[str]]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- quickstart:start -->")[1].split("<!-- quickstart:end -->")[0]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.startswith("kbench ")]


def test_every_quickstart_command_runs_as_written(tmp_path, shared_data):
    commands = quickstart()
    toy = tiny_suite(tmp_path / "toy")
    text = (toy / "suite.toml").read_text()
    (toy / "suite.toml").write_text(text.replace('name = "tiny"\n', 'name = "tiny"\nclaims = ["kola"]\n', 1))
    work = tmp_path / "work"
    work.mkdir()
    for args in commands:
        args = args[1:]
        if args[:3] == ["suite", "run", "claims-cpu"]:  # the injected toy suite (the module docstring says why)
            args = ["suite", "run", str(toy / "suite.toml"), *args[3:]]
        done = run_kbench(*args, cwd=work)
        assert done.returncode == 0, f"kbench {shlex.join(args)}\n{done.stderr[-3000:]}"
    assert [c[:2] for c in commands] == [["kbench", "build"], ["kbench", "evaluate"], ["kbench", "report"],
                                         ["kbench", "suite"], ["kbench", "claims"]]
    assert (work / "runs" / "lama" / "stats.json").is_file()
    assert (work / "runs" / "smollm2" / "results.json").is_file()
    assert (work / "runs" / "report" / "index.html").is_file()
    assert (work / "runs" / "claims-cpu" / "claims.md").is_file()
