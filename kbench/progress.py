"""One progress display for all long work (training, fits, extraction, SPARQL batches, units).

    with progress("soft prompts P19", total=120, unit="steps") as advance:
        for batch in batches:
            ...
            advance(1)

On a terminal: a rich bar with rate and ETA on stderr (transient). Elsewhere (CI, a pipe, a
notebook's captured stderr): log lines through `logging` on the `kbench.progress` logger, at the
start, at most every `LOG_EVERY_S` seconds, and at the end, each with done/total and an ETA, so a
long stage is never silent in a log file either. Importable from every layer.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator

LOG = logging.getLogger("kbench.progress")
LOG_EVERY_S = 10.0


def _eta(done: int, total: int, elapsed: float) -> str:
    if done <= 0 or total <= done:
        return "eta ?" if done <= 0 else "done"
    seconds = elapsed / done * (total - done)
    return f"eta {int(seconds // 60)}m{int(seconds % 60):02d}s"


@contextlib.contextmanager
def progress(description: str, total: int, unit: str = "items") -> Iterator[Callable[[int], None]]:
    """Yield `advance(n)`; the display ends (and the last line is logged) when the block exits."""
    from rich.console import Console

    console = Console(stderr=True)
    start = time.monotonic()
    done = 0
    last_log = start
    LOG.info("%s: 0/%d %s", description, total, unit)
    if console.is_terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        bar = Progress(*columns, console=console, transient=True)
        task = bar.add_task(description, total=total)
        bar.start()
    else:
        bar = None

    def advance(n: int = 1) -> None:
        nonlocal done, last_log
        done += n
        if bar is not None:
            bar.advance(task, n)
        now = time.monotonic()
        if now - last_log >= LOG_EVERY_S and done < total:
            last_log = now
            LOG.info("%s: %d/%d %s (%s)", description, done, total, unit, _eta(done, total, now - start))

    try:
        yield advance
    finally:
        if bar is not None:
            bar.stop()
        LOG.info("%s: %d/%d %s in %.1fs", description, done, total, unit, time.monotonic() - start)
