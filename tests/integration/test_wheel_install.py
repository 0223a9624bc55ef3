"""kbench as a pip user gets it: the wheel installed into a fresh venv outside the checkout.

The venv gets only the wheel (`pip install --no-deps`, so no editable install and no `pipelines/`
on disk); third-party packages come from this test's own environment through a `.pth` line
naming its site-packages (a plain path: the `.pth` files there, the checkout's editable install
among them, are not processed). From an empty folder it runs `kbench recipes`, `kbench build lama
--data-dir DATA`, `kbench evaluate extraction --limit 20` on the packaged model, `kbench report`
and the Python API example (docs/python-api.md), whose numbers must equal the CLI's.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import clean_source_copy

pytestmark = pytest.mark.slow


def _outside_env() -> dict:
    """This environment without what points at the checkout (PYTHONPATH) or at another venv."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KBENCH_DATA_DIR", "VIRTUAL_ENV")}


def _run(command: list[str], cwd: Path, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}: {done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("pip-user")
    wheels = base / "wheels"
    source = clean_source_copy(base / "source")  # not the checkout: its ignored build/lib/ could ship stale modules
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "--wheel-dir", str(wheels),
          str(source)], base, _outside_env())
    (wheel,) = wheels.glob("kbench-*.whl")
    env_dir = base / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], base, _outside_env())
    python = env_dir / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base,
                   _outside_env()).stdout.strip()
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "--quiet", str(wheel)],
         base, _outside_env())
    # after the install: with this environment visible, pip would take its editable kbench as already installed
    Path(purelib, "third_party.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))
    return env_dir


def test_a_pip_user_builds_evaluates_and_reports_from_an_empty_folder(venv, shared_data, tmp_path):
    env = _outside_env()
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")   # no per-user data either: --data-dir names it
    kbench = str(venv / "bin" / "kbench")
    work = tmp_path / "empty"
    work.mkdir()

    probe = ("import tomllib, kbench, kbench.construct.recipe_names as r\n"
             "maple = r.resolve_recipe('maple-wiki')\n"
             "mappings = [s['mapping'] for s in tomllib.loads(maple.read_text())['stages'] if 'mapping' in s]\n"
             "print(kbench.__file__, r.RECIPE_DIR, *[maple.parent / m for m in mappings])")
    where = _run([str(venv / "bin" / "python"), "-c", probe], work, env).stdout.split()
    assert len(where) == 3 and all(Path(p).is_relative_to(venv) for p in where), where   # the wheel's copy, not the checkout
    assert Path(where[2]).is_file()   # a recipe's paths relative to its own file resolve inside the installed package

    listed = _run([kbench, "recipes"], work, env).stdout.splitlines()
    assert [line.split()[0] for line in listed] == ["evolving", "lama", "lama-trex", "left-textbook", "maple-wiki"]

    _run([kbench, "build", "lama", "--data-dir", str(shared_data)], work, env)
    assert (work / "runs" / "lama" / "stats.json").is_file()

    _run([kbench, "evaluate", "extraction", "--dataset", "runs/lama", "--model", "smollm2-135m", "--limit", "20",
          "--out", "runs/cli"], work, env)
    cli = json.loads((work / "runs" / "cli" / "results.json").read_text())
    assert cli["items"]["count"] == 20

    _run([kbench, "report", "runs/cli", "--out", "report"], work, env)
    assert (work / "report" / "index.html").is_file()

    example = ("import kbench\n"
               "r = kbench.evaluate('extraction', dataset='runs/lama', model='smollm2-135m', limit=20, out='runs/api')\n"
               "print(r.headline)\n"
               "import json; print(json.dumps(r.headline))\n")
    printed = _run([str(venv / "bin" / "python"), "-c", example], work, env).stdout.splitlines()
    assert json.loads(printed[-1]) == cli["headline"]   # the API's numbers are the CLI's
