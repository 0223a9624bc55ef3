"""The version lines of `kbench --version` and `kbench version [--verbose]` (kept apart from the commands, which
import the app: `main`'s eager --version option imports these lines without a circle)."""

from __future__ import annotations

import importlib.metadata
import platform

# The libraries whose versions change results or failures; vLLM only where it is installed.
_LIBRARIES = ("torch", "transformers", "vllm")


def version_line() -> str:
    """ "kbench 0.2.0", with the commit when kbench runs from a git checkout ("+dirty" with local edits)."""
    from kbench import __version__
    from kbench.models.provenance import _git_commit

    commit = _git_commit()
    return f"kbench {__version__}" + (f" (commit {commit})" if commit else "")


def environment_lines() -> list[str]:
    """One "name: version" line per library (absent ones say so), then Python and the platform."""
    lines = []
    for name in _LIBRARIES:
        try:
            found = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found = "not installed"
        lines.append(f"{name}: {found}")
    lines.append(f"python: {platform.python_version()} ({platform.python_implementation()})")
    lines.append(f"platform: {platform.platform()}")
    return lines
