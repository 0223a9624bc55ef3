"""The evaluation engine: one run directory, fixed work units, one journal, one results envelope.

    results = evaluate(Extraction(), ctx, progress=bar.advance)

What it owns (a task never does):
- Capabilities first: the task's `needs(settings)` are checked against the model (and every extra
  model) before the plan loads an item: a lacking model is a `UserError` naming the task or
  technique, the capability and the backends that have it. The `model` block of results.json
  records the backend and its capabilities.
- The plan's state: `Plan.state` goes to every `score`, `restore` (which returns the state the next
  units see) and `aggregate` / `finish` call; tasks keep nothing on `self`.
- The run directory: `config.json` (everything the rows depend on: task, model identity, dataset
  sha256, settings); reopening a folder with a different config is a `UserError` naming the keys
  that differ, so two runs never mix their rows. An exclusive lock on `.lock` keeps a second
  process out (released when the process dies, so a killed run leaves no stale lock).
- Fixed units: the task's plan cuts the items into units before anything runs. Each finished
  unit is one fsynced line of `journal.jsonl` ({"unit": key, "rows": [...]}); a rerun skips
  journalled units and computes the others exactly as an uninterrupted run would, so the
  outputs are bit-identical, resumed or not. A line cut short by a crash is truncated away.
- Data parallelism: under `accelerate launch` (WORLD_SIZE > 1) process r computes units
  r, r + W, r + 2W, ...; every process appends to the one journal (under a file lock); the main
  process waits for the others, then aggregates and writes once. A `collective` task (XTEVAL:
  DDP training inside a unit) runs every unit on every process; the main process journals it.
- The envelope (`docs/results-envelope.md`, `schemas/results.v2.json`): `results.json`,
  `items.parquet` and `items.jsonl`, all written atomically after validation. Every task's
  summary names its protocol (`kbench.protocol`); the engine writes its block as `protocol`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from kbench.errors import UserError
from kbench.evaluate.task import Plan, RunContext, Task
from kbench.io import load_schema, read_json, write_json, write_jsonl, write_parquet
from kbench.models.cached import CachedModel
from kbench.models.interface import require
from kbench.progress import progress as progress_bar

LOG = logging.getLogger(__name__)

SCHEMA = "kbench.results.v2"
ENVELOPE_SCHEMA = "results.v2.json"
PROTOCOL_SCHEMAS = ("protocol.v2.json", "protocol.v1.json")  # v1: results written before interpretations
JOURNAL = "journal.jsonl"


@dataclass(frozen=True)
class Processes:
    rank: int
    world: int
    barrier: Callable[[], None]

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def processes() -> Processes:
    """This process's place under `accelerate launch` / torchrun; one process otherwise."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return Processes(0, 1, lambda: None)
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    # ACCELERATE_USE_CPU (CPU processes over gloo) is read by Accelerator, not by PartialState itself
    state = PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))
    return Processes(state.process_index, state.num_processes, state.wait_for_everyone)


def validate(document: dict, schema_name: str | Path, where: str = "") -> None:
    """Check a document against a versioned schema (a name in `kbench/schemas/`, or a task folder's
    file); task schemas refer to the envelope's `$defs/estimate` as `kbench/results.v2.json#/$defs/estimate`."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    schemas = [load_schema(name) for name in (ENVELOPE_SCHEMA, *PROTOCOL_SCHEMAS)]
    registry = Registry().with_resources((schema["$id"], Resource.from_contents(schema)) for schema in schemas)
    schema = read_json(schema_name) if isinstance(schema_name, Path) else load_schema(schema_name)
    error = next(Draft202012Validator(schema, registry=registry).iter_errors(document), None)
    if error is not None:
        path = ".".join(str(p) for p in error.absolute_path) or "(top)"
        shown = f"schemas/{schema_name}" if isinstance(schema_name, str) else schema_name
        raise AssertionError(f"{where or 'results'} do not match {shown} at {path}: {error.message}")


class Journal:
    """journal.jsonl: one fsynced line per finished unit."""

    def __init__(self, path: Path):
        self.path = path

    def read(self) -> dict[str, list[dict]]:
        if not self.path.exists():
            return {}
        units, good_bytes = {}, 0
        with open(self.path, "rb") as fh:
            fcntl.flock(fh, fcntl.LOCK_SH)
            for raw in fh:
                try:
                    if not raw.endswith(b"\n"):
                        raise ValueError("cut short")
                    record = json.loads(raw)
                    units[record["unit"]] = record["rows"]
                except (ValueError, KeyError, TypeError):
                    break  # a crash mid-write: keep the units before it
                good_bytes += len(raw)
        if good_bytes != self.path.stat().st_size:
            os.truncate(self.path, good_bytes)
        return units

    def append(self, key: str, rows: Sequence[Mapping[str, Any]]) -> None:
        line = json.dumps({"unit": key, "rows": rows}, ensure_ascii=False, sort_keys=True, default=str) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


class RunDirectory:
    def __init__(self, path: Path, config: dict, procs: Processes):
        self.path = Path(path)
        self.config = json.loads(json.dumps(config, default=str))
        self.procs = procs
        self.journal = Journal(self.path / JOURNAL)
        self._lock: TextIO | None = None  # the open .lock file, held (flock) while the run writes

    def __enter__(self) -> RunDirectory:
        if self.procs.is_main:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UserError(f"cannot create the run directory {self.path}: {exc.strerror}") from exc
            self._lock = lock = open(self.path / ".lock", "a")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                lock.close()
                raise UserError(f"{self.path} is in use by another kbench process") from exc
            self._check_config()
        self.procs.barrier()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()

    def _check_config(self) -> None:
        path = self.path / "config.json"
        if path.exists():
            stored = read_json(path)
            if stored != self.config:
                differ = sorted(k for k in set(stored) | set(self.config) if stored.get(k) != self.config.get(k))
                raise UserError(
                    f"{self.path} holds a different run (differs in: {', '.join(differ)}); use another --out or delete the folder"
                )
        else:
            write_json(path, self.config)


def environment(model: CachedModel) -> dict:
    from kbench.models.provenance import environment as describe

    return describe(model.info.device)


def check_capabilities(task: Task, ctx: RunContext) -> None:
    """Refuse a model (and each extra model) lacking what the task or one of its techniques needs:
    a `UserError` naming who needs what, before any item is loaded."""
    from kbench.check.latest import refuse_inconsistent

    for who, needed in task.needs(ctx.settings).items():
        require(ctx.model, sorted(needed), who)
        refuse_inconsistent(ctx.model, needed, who)
        for role, model in ctx.models.items():
            require(model, sorted(needed), f"{who} (the {role} model)")
            refuse_inconsistent(model, needed, f"{who} (the {role} model)")


def model_block(model: CachedModel) -> dict:
    """The envelope's `model` block: the backend's description, what it can do, and the latest
    `kbench check` of it where one exists (`kbench.check.latest`)."""
    from kbench.check.latest import summary

    block = {**model.describe(), "backend": model.info.backend, "capabilities": sorted(c.value for c in model.info.capabilities)}
    checked = summary(model.info.identity)
    return {**block, "check": checked} if checked is not None else block


def evaluate(task: Task, ctx: RunContext, progress: Callable[[int, int], None] | None = None) -> dict | None:
    """Check capabilities, plan, compute the missing units, aggregate, write. Returns the results
    on the main process (None on the others under `accelerate launch`)."""
    check_capabilities(task, ctx)
    procs = processes()
    plan: Plan = task.plan(ctx)
    state = plan.state
    keys = [u.key for u in plan.units]
    if len(set(keys)) != len(keys):
        raise AssertionError(f"{task.name}: the plan repeats a unit key")
    model = model_block(ctx.model)
    config = {
        "task": task.name,
        "model": model["identity"],
        "dataset": plan.dataset.get("sha256"),
        "settings": ctx.settings.model_dump(mode="json"),
        **plan.depends_on,
    }
    total = sum(len(u.items) for u in plan.units)
    started = time.perf_counter()
    with RunDirectory(ctx.run_dir, config, procs) as run, contextlib.ExitStack() as stack:
        done = run.journal.read()
        todo = [(i, u) for i, u in enumerate(plan.units) if u.key not in done]
        resumed = len(keys) - len(todo)
        LOG.info(
            "%s: %d units, %d items; %d units journalled before, %d to compute", task.name, len(keys), total, resumed, len(todo)
        )
        if progress is not None:
            progress(total - sum(len(u.items) for _, u in todo), total)
        cache_before = ctx.model.cache_stats()
        bar = stack.enter_context(progress_bar(f"{task.name} ({ctx.run_dir.name})", total, "items"))
        bar(total - sum(len(u.items) for _, u in todo))
        for index, unit in enumerate(plan.units):
            if unit.key in done:
                state = task.restore(ctx, state, unit, done[unit.key])
            elif task.collective:
                scored = task.score(ctx, state, unit)  # every process takes part
                if procs.is_main:
                    run.journal.append(unit.key, scored)
                procs.barrier()
                state = task.restore(ctx, state, unit, run.journal.read()[unit.key])  # the main process's rows, everywhere
            elif index % procs.world == procs.rank:
                scored = task.score(ctx, state, unit)
                run.journal.append(unit.key, scored)
                state = task.restore(ctx, state, unit, scored)
            else:
                continue
            if unit.key not in done:
                LOG.debug("%s: unit %s computed (%d items)", task.name, unit.key, len(unit.items))
                bar(len(unit.items))
                if progress is not None:
                    progress(len(unit.items), total)
        stack.close()
        cache_after = ctx.model.cache_stats()
        procs.barrier()
        if not procs.is_main:
            return None
        units = run.journal.read()
        missing = [k for k in keys if k not in units]
        if missing:
            raise UserError(
                f"{ctx.run_dir}: units {', '.join(missing[:3])} were not computed (a process failed?); rerun the command"
            )
        rows = [row for key in keys for row in units[key]]
        seconds = time.perf_counter() - started
        computed = sum(len(u.items) for _, u in todo)
        summary = task.aggregate(ctx, state, rows)
        if summary.protocol is None:
            # every task names the procedure behind its numbers (docs/protocol.md): a run without
            # one would read as "not recorded", like a file from before the protocol record
            raise AssertionError(f"{task.name}: aggregate returned no protocol (Summary.protocol)")
        validate(summary.metrics, task.metrics_schema(), f"{task.name} metrics")
        results = {
            "schema": SCHEMA,
            "task": task.name,
            "model": model,
            "dataset": plan.dataset,
            "settings": ctx.settings.model_dump(mode="json"),
            "environment": environment(ctx.model),
            "timing": {
                "seconds": round(seconds, 3),
                "units_computed": len(todo),
                "units_total": len(plan.units),
                "items_computed": computed,  # work items in those units (xteval: seeds and fine-tuning runs)
                "items_per_second": round(computed / seconds, 3) if computed and seconds > 0 else None,
                # this process's model calls (other processes keep their own counts)
                "cache_hits": cache_after["hits"] - cache_before["hits"],
                "cache_computed": cache_after["computed"] - cache_before["computed"],
            },
            "headline": summary.headline,
            "metrics": summary.metrics,
            "items": {"file": "items.parquet", "count": len(rows)},
            "protocol": summary.protocol.block(),
        }
        results = json.loads(json.dumps(results))  # tuples -> lists, int keys -> strings, as readers see it
        validate(results, ENVELOPE_SCHEMA)
        task.finish(ctx, state, rows, results)
        write_items(ctx.run_dir, rows)
        write_json(ctx.run_dir / "results.json", results)
        LOG.info("%s: wrote %s (%d items, %.1fs)", task.name, ctx.run_dir / "results.json", len(rows), seconds)
    return results


def write_items(run_dir: Path, rows: list[dict]) -> None:
    import polars as pl

    write_jsonl(run_dir / "items.jsonl", rows)
    write_parquet(run_dir / "items.parquet", pl.DataFrame(rows, infer_schema_length=None))
