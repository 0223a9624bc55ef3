"""One cell of a suite, as `kbench evaluate` runs it, and the retries around it.

A cell is `kbench.evaluate(task, dataset=..., model=<the opened model>, out=OUT/cells/KEY, **settings)`:
the same engine, run folder and envelope as the command, so a cell half-computed when the suite
was killed resumes from its journal. The model is opened once per process and handed to every
cell of it (`ModelPool`), so it loads once and its result cache is shared.

Faults are retried as Inspect's `eval-set` retries a failed task: up to `retries` more times,
waiting `retry_wait`, then twice, four times as long. Any exception counts, a bad input as much as
a server that is down, since a suite runs unattended; the last error is kept for suite.json.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kbench.suite.spec import ModelEntry, TaskEntry

LOG = logging.getLogger("kbench.suite")
T = TypeVar("T")


def with_retries(what: str, fn: Callable[[], T], retries: int, wait: float) -> tuple[T | None, int, str | None]:
    """(value or None, attempts made, the last error or None)."""
    error = None
    for attempt in range(retries + 1):
        if attempt:
            pause = wait * 2 ** (attempt - 1)
            LOG.warning("%s failed (%s); retry %d of %d in %.1fs", what, error, attempt, retries, pause)
            time.sleep(pause)
        try:
            return fn(), attempt + 1, None
        except Exception as exc:  # every fault of a cell is retried, then recorded: the other cells go on
            error = f"{type(exc).__name__}: {exc}"
    LOG.error("%s failed after %d attempts: %s", what, retries + 1, error)
    return None, retries + 1, error


def open_entry(entry: ModelEntry):
    """The model a suite entry names, opened as `kbench evaluate --model` opens it (shared result cache)."""
    from kbench.models.cached import open_model
    from kbench.models.interface import ModelSpec
    from kbench.models.served.spec import backend_for

    spec = ModelSpec(
        name=entry.model,
        backend=backend_for(entry.model),
        dtype=entry.dtype,
        device=entry.device,
        trust_remote_code=entry.trust_remote_code,
        batch_size=entry.batch_size,
    )
    return open_model(spec)


class ModelPool:
    """Opened models of this process, by suite entry: each loads once for all its cells. A model
    that failed to open is remembered with its error, so its cells fail without reloading."""

    def __init__(self, retries: int, retry_wait: float):
        self.retries, self.retry_wait = retries, retry_wait
        self.opened: dict[ModelEntry, tuple[Any, int, str | None]] = {}

    def get(self, entry: ModelEntry) -> tuple[Any, int, str | None]:
        if entry not in self.opened:
            self.close()  # one model in memory at a time: cells come grouped by model
            self.opened[entry] = with_retries(
                f"opening model {entry.label}", lambda: open_entry(entry), self.retries, self.retry_wait
            )
        return self.opened[entry]

    def close(self) -> None:
        """Close the opened models (a vLLM engine left to interpreter exit aborts the process)."""
        for model, _, _ in self.opened.values():
            if model is not None:
                model.close()
        self.opened.clear()


def run_cell(task: TaskEntry, dataset: str, model: Any, run_dir: Path, limit: int | None) -> dict:
    """Evaluate one cell; returns the run's results envelope."""
    from kbench.api import evaluate

    settings = dict(task.settings)
    if limit is not None:
        settings["limit"] = min(limit, settings.get("limit") or limit)
    result = evaluate(task.task, dataset=dataset, model=model, out=run_dir, **settings)
    if result is None:  # only a process other than the main one of `accelerate launch` gets none
        raise RuntimeError(f"cell {run_dir.name}: the evaluation returned no results (not the main process)")
    return result.results


def cell_outcome(results: dict | None, attempts: int, error: str | None) -> dict:
    """What suite.json keeps of a cell run."""
    if results is None:
        return {"status": "failed", "attempts": attempts, "error": error, "headline": None}
    return {"status": "done", "attempts": attempts, "error": None, "headline": results["headline"]}


def evaluate_cell(
    pool: ModelPool, model: ModelEntry, task: TaskEntry, dataset: str, run_dir: Path, limit: int | None
) -> tuple[dict, dict | None]:
    """(the cell's outcome for suite.json, the model's row of the model table): open the model
    (once per pool), run the cell, retry it."""
    from kbench.suite.model_table import model_row, unavailable_row

    opened, opened_attempts, error = pool.get(model)
    if opened is None:
        why = f"model {model.label} did not open: {error}"
        return cell_outcome(None, opened_attempts, why), unavailable_row(model, error or "did not open")
    results, attempts, error = with_retries(
        f"cell {run_dir.name}", lambda: run_cell(task, dataset, opened, run_dir, limit), pool.retries, pool.retry_wait
    )
    return cell_outcome(results, attempts, error), model_row(model, opened)
