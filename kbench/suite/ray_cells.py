"""`kbench suite run --executor ray`: each cell is one Ray task, on the Ray that builds use.

Ray is started or joined exactly as `kbench build --executor ray` does it (`RayExecutor`: the
kbench code shipped with the job, `--ray-address` or a Ray of our own), and Ray schedules: each
cell asks for one CPU, and one GPU when its model's device is cuda. Ray reruns a cell whose worker
died (`max_retries`); faults inside a cell are retried in the task, as locally. A worker process
keeps the model it opened for its next cell of the same model, so a model loads once per
worker process, not once per cell.

Every node must see the suite folder, the datasets and the models at the same paths (one
machine or a shared filesystem), as for builds; relative paths are made absolute on the driver.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kbench.suite.cells import ModelPool, evaluate_cell
from kbench.suite.spec import Cell, ModelEntry, Suite, TaskEntry
from kbench.suite.state import SuiteState, cell_dir

#: Ray reruns a cell whose worker or node died this many times (system failures only).
WORKER_RETRIES = 2

_POOL: ModelPool | None = None  # this worker process's opened model


def _cell_task(model: ModelEntry, task: TaskEntry, dataset: str, run_dir: str, limit, retries: int, wait: float):
    global _POOL
    if _POOL is None or (_POOL.retries, _POOL.retry_wait) != (retries, wait):
        _POOL = ModelPool(retries, wait)
    return evaluate_cell(_POOL, model, task, dataset, Path(run_dir), limit)


def _absolute(model: ModelEntry) -> ModelEntry:
    """A model given as a relative path, made absolute: a Ray worker runs in a folder of its own."""
    path = Path(model.model)
    if not path.is_absolute() and path.exists():
        return model.model_copy(update={"model": str(path.resolve()), "name": model.label})
    return model


def run_on_ray(
    suite: Suite,
    out: Path,
    state: SuiteState,
    todo: list[Cell],
    paths: dict[str, str],
    limit,
    ray_address: str | None,
    advance: Callable[[int], None],
) -> None:
    from kbench.construct.executors.ray import RayExecutor

    executor = RayExecutor(address=ray_address)
    ray = executor.ray
    header = suite.spec.suite
    try:
        remote = ray.remote(_cell_task)
        pending = {}
        for cell in todo:
            model = _absolute(suite.model(cell.model))
            dataset = paths[cell.dataset]
            dataset = str(Path(dataset).resolve()) if Path(dataset).exists() else dataset
            options = {"num_cpus": 1, "num_gpus": 1 if model.device.startswith("cuda") else 0, "max_retries": WORKER_RETRIES}
            ref = remote.options(**options).remote(
                model,
                suite.task(cell.task),
                dataset,
                str(cell_dir(out, cell).resolve()),
                limit,
                header.retries,
                header.retry_wait,
            )
            pending[ref] = cell
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                cell = pending.pop(ref)
                try:
                    outcome, row = ray.get(ref)
                except Exception as exc:  # the worker died more often than Ray retries: this cell fails, the others go on
                    outcome, row = (
                        {
                            "status": "failed",
                            "attempts": WORKER_RETRIES + 1,
                            "error": f"{type(exc).__name__}: {exc}",
                            "headline": None,
                        },
                        None,
                    )
                if row is not None:  # the suite file's spelling of the model, not the path made absolute
                    state.record_model(cell.model, {**row, "model": suite.model(cell.model).model})
                state.record(cell, outcome)
                advance(1)
    finally:
        executor.close()
