"""kbench's logging set-up: module loggers everywhere (`logging.getLogger(__name__)`), configured
once by the CLI (`-v` / `--log-level`) or by a library caller, plus a `log.txt` in each run folder.

    configure("INFO")                       # stderr, what the CLI does by default
    with run_log(run_dir / "log.txt"):      # the same records, also into the run folder
        ...

Only the `kbench` logger tree is configured; a notebook's other loggers are left alone.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

ROOT = logging.getLogger("kbench")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_STDERR_HANDLER: logging.Handler | None = None


def configure(level: str | int = "INFO") -> None:
    """Log kbench's records at `level` and above to stderr (idempotent: one handler)."""
    global _STDERR_HANDLER
    if isinstance(level, str):
        level = logging.getLevelName(level.upper())
        if not isinstance(level, int):
            raise ValueError(f"unknown log level {level!r}")
    if _STDERR_HANDLER is None:
        _STDERR_HANDLER = logging.StreamHandler()
        _STDERR_HANDLER.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        ROOT.addHandler(_STDERR_HANDLER)
    _STDERR_HANDLER.setLevel(level)
    ROOT.setLevel(min(level, ROOT.level or logging.INFO, logging.INFO))
    ROOT.propagate = False


@contextlib.contextmanager
def run_log(path: Path, level: int = logging.INFO) -> Iterator[None]:
    """Append kbench's records at `level` and above to `path` while the block runs (a resumed run
    appends to the same file, so the log tells the whole history of the run folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.setLevel(level)
    ROOT.addHandler(handler)
    if ROOT.level == logging.NOTSET or ROOT.level > level:
        ROOT.setLevel(level)
    try:
        yield
    finally:
        ROOT.removeHandler(handler)
        handler.close()
