"""Versions: `kbench --version`, `kbench version --verbose` and `kbench.__version__`, one source (the metadata)."""

from __future__ import annotations

import importlib.metadata
import platform
import re
import tomllib

from tests.conftest import REPO_ROOT, run_kbench


def test_dunder_version_is_the_installed_metadata():
    import kbench

    assert kbench.__version__ == importlib.metadata.version("kbench")


def test_pyproject_version_is_a_release_the_changelog_describes():
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(declared)}\]", changelog, re.MULTILINE), f"CHANGELOG.md has no entry for {declared}"


def test_dash_dash_version_prints_the_version_and_the_checkout_commit():
    import kbench

    result = run_kbench("--version")
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert line.startswith(f"kbench {kbench.__version__}")
    if (REPO_ROOT / ".git").exists():  # a checkout (CI's clone is one): the commit, hex, "+dirty" with local edits
        assert re.search(r"\(commit [0-9a-f]{40}(\+dirty)?\)$", line), line


def test_version_verbose_names_the_libraries_python_and_platform():
    result = run_kbench("version", "--verbose")
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines()[1:])
    assert lines["torch"].split("+")[0] == importlib.metadata.version("torch").split("+")[0]
    assert lines["transformers"] == importlib.metadata.version("transformers")
    assert "vllm" in lines  # a version, or "not installed"
    assert lines["python"].startswith(platform.python_version())
    assert lines["platform"] == platform.platform()
