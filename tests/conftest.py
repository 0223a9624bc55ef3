"""Shared fixtures: where the real data lives, and running the CLI as a user would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from tests import cli_forkserver

#: Fixture modules shared by many test files, registered once here instead of imported into each file
#: (a module-scoped fixture defined in a plugin is still set up once per test module that uses it).
pytest_plugins = ["tests.fixtures_models", "tests.servers.fixtures", "tests.servers.hub", "tests.card_folders",
                  "tests.lama_miniature", "tests.dataset_folders"]

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Test files that start Ray: they run on one worker, one after the other (scripts/test.sh runs pytest-xdist).
RAY_FILES = {"test_build_ray.py", "test_executor_ray.py", "test_suite_ray.py"}
#: Test files that start a vLLM engine (~4.4 GB, pinned to one core): one worker, one after the other.
VLLM_FILES = {"test_served_vllm.py", "test_vllm_backend.py"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads these marks
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist `--dist loadgroup`, each file is one group (its module fixtures, a served model or
    a built dataset, start once, on one worker); the Ray files are one group between them, the vLLM files another."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        file = item.nodeid.split("::")[0]
        group = "ray" if item.path.name in RAY_FILES else "vllm" if item.path.name in VLLM_FILES else file
        item.add_marker(pytest.mark.xdist_group(group))
    # Longest first (scripts/test.sh keeps this order: --no-loadscope-reorder): the vLLM group (~5 min), then the
    # real-model files, then the Ray group; the many short files last fill in whichever worker is free first.
    items.sort(key=lambda item: 0 if item.path.name in VLLM_FILES else 1 if item.path.parent.name == "slow"
               else 2 if item.path.name in RAY_FILES else 3)


def pytest_configure(config):
    """Stop before any test when xdist cannot take the groups: it marks a grouped test through its node id
    (`...@group`), which pytest 9.2 no longer lets it change (pytest-xdist#1386). Without the groups every
    module fixture (a served model, an XTEVAL run) would start once per worker, silently."""
    if getattr(config.option, "dist", "no") != "loadgroup":
        return
    installed = {name: tuple(int(p) for p in version(name).split(".")[:2]) for name in ("pytest", "pytest-xdist")}
    if installed["pytest"] >= (9, 2) and installed["pytest-xdist"] <= (3, 8):
        raise pytest.UsageError("pytest-xdist --dist loadgroup does not group tests on pytest >= 9.2 (pytest-xdist#1386); "
                                "install the pytest that pyproject.toml's test extra pins")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real source data, found as `kbench build` finds it ($KBENCH_DATA_DIR, else ../shared/data
    beside the checkout or beside the checkout it was cloned from); never copied into the repo."""
    from kbench.construct.data_root import ENV_VAR, find_data_dir

    folder, origin = find_data_dir()
    if folder is None or not folder.is_dir():
        pytest.fail(f"shared data not found ({origin}); set {ENV_VAR}")
    return folder


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Each test session gets its own kbench cache, so tests never see a developer's cache."""
    cache = tmp_path_factory.getbasetemp() / "kbench-cache"
    monkeypatch.setenv("KBENCH_CACHE", str(cache))


#: What a wheel is built from (pyproject.toml's package, its package data and its readme).
PACKAGE_SOURCES = ("pyproject.toml", "README.md", "kbench", "pipelines", "schemas", "data_cards")


def clean_source_copy(dest: Path) -> Path:
    """The checkout's own package files (tracked, or new and not ignored) copied into `dest`, links
    kept: a wheel built there cannot ship an ignored leftover (a stale build/lib/ module, an egg-info)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *PACKAGE_SOURCES],
                            cwd=REPO_ROOT, capture_output=True, check=True, timeout=60).stdout
    for name in sorted(set(filter(None, listed.decode().split("\0")))):
        source = REPO_ROOT / name
        if not source.is_symlink() and not source.is_file():  # deleted in the working tree, not yet committed
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    return dest


def run_kbench(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the real CLI in its own process (exit codes and stderr exactly as a user sees them), forked
    from a warm interpreter that has torch and transformers imported already (tests/cli_forkserver.py)."""
    return cli_forkserver.run(list(args), cwd or REPO_ROOT, {**os.environ, **(env or {})}, timeout)


def _build_once(tmp_path_factory, recipe: str, name: str) -> Path:
    out = tmp_path_factory.getbasetemp() / "built" / name
    if not (out / "stats.json").is_file():
        cache = tmp_path_factory.getbasetemp() / "kbench-cache"  # the session's isolated cache
        result = run_kbench("build", str(REPO_ROOT / "pipelines" / recipe), "--out", str(out),
                            env={"KBENCH_CACHE": str(cache)})
        assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="session")
def built_lama(tmp_path_factory, shared_data) -> Path:
    """The LAMA benchmark built once per session through the CLI from ../shared/data (read-only for tests)."""
    return _build_once(tmp_path_factory, "lama-trex.toml", "lama")


@pytest.fixture(scope="session")
def built_left(tmp_path_factory, shared_data) -> Path:
    """The LEFT true/false statements built once per session through the CLI (read-only for tests)."""
    return _build_once(tmp_path_factory, "left-textbook.toml", "left")
