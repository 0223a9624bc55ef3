"""`run_suite(suite, out)`: every cell of a suite, resumable, with progress across the grid.

    state = run_suite(load_suite(Path("suite.toml")), Path("runs/suite"), executor="local")
    state.failed()   # the keys of the cells that failed after their retries

Order: recipe datasets are built first (into OUT/datasets/NAME; a build resumes its finished
stages), then the cells, grouped by model so each model loads once. Finished cells (suite.json)
are skipped; the rest run through `kbench.evaluate`, whose journal resumes a half-finished cell.
With `executor="ray"` the cells are Ray tasks (`kbench.suite.ray_cells`).
"""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path

from kbench.suite.cells import ModelPool, evaluate_cell, with_retries
from kbench.suite.spec import Cell, Suite
from kbench.suite.state import SuiteState, cell_dir

LOG = logging.getLogger("kbench.suite")
DATASETS = "datasets"


def run_suite(
    suite: Suite, out: Path, *, executor: str = "local", ray_address: str | None = None, limit: int | None = None
) -> SuiteState:
    from kbench.progress import progress

    state = SuiteState(suite, out, limit)
    state.save()
    todo = [cell for cell in suite.cells if not state.finished(cell)]
    done_before = len(suite.cells) - len(todo)
    paths, broken = prepare_datasets(suite, out, state)
    for cell in [c for c in todo if c.dataset in broken]:
        state.record(cell, {"status": "failed", "attempts": 0, "error": broken[cell.dataset], "headline": None})
    todo = [c for c in todo if c.dataset not in broken]
    LOG.info("suite %s: %d cells, %d finished before, %d to run", suite.spec.suite.name, len(suite.cells), done_before, len(todo))
    with progress(f"suite {suite.spec.suite.name} ({done_before} cells done before)", len(todo), "cells") as advance:
        if executor == "ray":
            from kbench.suite.ray_cells import run_on_ray

            run_on_ray(suite, out, state, todo, paths, limit, ray_address, advance)
        else:
            run_here(suite, out, state, todo, paths, limit, advance)
    return state


def run_here(suite: Suite, out: Path, state: SuiteState, todo: list[Cell], paths: dict[str, str], limit, advance) -> None:
    """The cells in this process, model after model (each opened once)."""
    header = suite.spec.suite
    pool = ModelPool(header.retries, header.retry_wait)
    try:
        for cell in todo:  # suite.cells come model by model, so the pool holds one model at a time
            outcome, row = evaluate_cell(
                pool, suite.model(cell.model), suite.task(cell.task), paths[cell.dataset], cell_dir(out, cell), limit
            )
            if row is not None:
                state.record_model(cell.model, row)
            state.record(cell, outcome)
            advance(1)
    finally:
        pool.close()


def prepare_datasets(suite: Suite, out: Path, state: SuiteState) -> tuple[dict[str, str], dict[str, str]]:
    """(dataset name -> the folder or Hub id cells read, dataset name -> the error that left it unbuilt)."""
    from kbench.api import build

    header = suite.spec.suite
    paths, broken = {}, {}
    used = {c.dataset for c in suite.cells if not state.finished(c)}
    for entry in suite.spec.datasets:
        if entry.path is not None:
            paths[entry.name] = suite.dataset_path(entry.name)
            state.record_dataset(entry.name, {"path": entry.path, "recipe": None, "error": None})
            continue
        folder = out / DATASETS / entry.name
        paths[entry.name] = str(folder)
        if entry.name not in used:
            continue
        built, _, error = with_retries(
            f"building dataset {entry.name}",
            partial(build, suite.recipe(entry.name), out=folder, overrides=list(entry.overrides)),
            header.retries,
            header.retry_wait,
        )
        if built is None:
            broken[entry.name] = f"dataset {entry.name} was not built: {error}"
        relative = f"{DATASETS}/{entry.name}"
        state.record_dataset(entry.name, {"path": relative, "recipe": entry.recipe, "error": broken.get(entry.name)})
    return paths, broken
