"""Errors a user can act on.

Anything raised as `UserError` is printed by the CLI as one clear line (no traceback) and
exits with code 2. Messages name the file and the line or key at fault.
"""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """Bad input, bad config or a missing optional dependency: the user can fix it."""

    exit_code = 2


class InputError(UserError):
    """A problem in an input file, located by file and (when known) line or key."""

    def __init__(self, path: str | Path, message: str, *, line: int | None = None, key: str | None = None):
        self.path = str(path)
        self.line = line
        self.key = key
        where = self.path
        if line is not None:
            where += f":{line}"
        if key is not None:
            where += f" [{key}]"
        self.message = message
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # picklable: raised on a Ray worker, it reaches the driver as itself
        return _input_error, (type(self), self.path, self.message, self.line, self.key)


def _input_error(cls, path, message, line, key):
    return cls(path, message, line=line, key=key)


class MissingDependencyError(UserError):
    """An optional dependency is needed for this feature."""

    def __init__(self, package: str, feature: str, extra: str | None = None):
        hint = f"pip install 'kbench[{extra}]'" if extra else f"pip install {package}"
        self.parts = (package, feature, extra)
        super().__init__(f"{feature} needs the package '{package}'. Install it with: {hint}")

    def __reduce__(self):  # picklable, as InputError
        return type(self), self.parts


def require(module: str, feature: str, extra: str | None = None, package: str | None = None):
    """Import an optional module or raise a `MissingDependencyError` saying how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(package or module, feature, extra) from exc
