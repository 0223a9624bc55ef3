"""Run a recipe into a run directory, resuming finished stages.

Run directory layout:

    OUT/
      README.md, data/<config>/<split>.parquet   the dataset (written by `write_dataset`)
      manifest.json   recipe, resolved parameters, inputs with sha256, package versions, config hash,
                      and `protocol`: the paper procedure the recipe names ([pipeline] protocol) and
                      every stage's departures from it (`Stage.deviations`), docs/construction-protocol.md
      stats.json      rows in/out per stage and drops by reason
      rejected/<stage id>.parquet   dropped rows with their reason
      .kbench/lock                  held while a build writes here
      .kbench/stages/NN_<id>/       each stage's output table and its completion marker
      .kbench/events.jsonl          one line per stage run: computed or reused

A stage's resume key hashes its name, code version, parameters, the sha256 of the files it
reads and the previous stage's key. So a changed parameter invalidates that stage and every
stage after it. The marker (`done.json`) is written last, after the stage's outputs were renamed
into place, so a `kill -9` at any moment leaves either a finished stage or none.

A row-wise stage (`Stage.row_wise`) runs chunk by chunk: the previous output is read `CHUNK_ROWS`
rows at a time, each chunk goes through `run` and its kept/rejected rows are appended to the
outputs, so its memory does not grow with the table. Where those chunks run is the executor's
business (`kbench/construct/executors/`: this process, or shards on a Ray cluster); the files are the
same. Other stages get the whole table as one lazy plan, always in this process. Every table is
written in row groups of `ROW_GROUP_ROWS` rows.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from kbench.construct.chunks import ROW_GROUP_ROWS, count_rows
from kbench.construct.context import StageContext
from kbench.construct.data_root import check_data_root
from kbench.construct.executors import Executor, RowWiseJob
from kbench.construct.executors.local import LocalExecutor
from kbench.construct.protocols import add_stage_deviations, construction_protocol
from kbench.construct.recipe import Recipe
from kbench.dataset import run_lock
from kbench.errors import UserError
from kbench.io import atomic_path, sha256_file, stable_hash, write_json
from kbench.paths import default_cache_dir

LOG = logging.getLogger(__name__)

#: Rows per chunk of a row-wise stage: its peak memory is set by this number, not by the table's
#: length. Measured on the MAPLE tail over a 1M-row triplet table (bench/stream_memory.py): 20k-row
#: chunks peak ~100 MB lower than 50k-row ones (whose polars joins and allocator caches grow with
#: the chunk) at a similar speed; much smaller chunks add per-chunk plan overhead (5k: ~25% slower).
CHUNK_ROWS = 20_000

TRACKED_PACKAGES = ("kbench", "polars", "pyarrow", "pyoxigraph", "datasets", "torch", "transformers", "spacy", "infini-gram")


@dataclass
class StageReport:
    id: str
    stage: str
    rows_in: int
    rows_out: int
    dropped: dict[str, int]
    reused: bool
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)

    def stats(self) -> dict[str, Any]:  # what stats.json keeps: no timings, so reruns are identical
        out = {
            "id": self.id,
            "stage": self.stage,
            "rows_in": self.rows_in,
            "rows_out": self.rows_out,
            "dropped": self.dropped,
            "dropped_total": sum(self.dropped.values()),
        }
        if self.details:
            out["details"] = self.details
        return out


@dataclass
class RunResult:
    run_dir: Path
    stages: list[StageReport] = field(default_factory=list)
    config_hash: str = ""


def package_versions() -> dict[str, str]:
    found = {}
    for name in TRACKED_PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _write_table(frame, path: Path) -> None:
    import polars as pl

    with atomic_path(path) as tmp:
        try:
            if isinstance(frame, pl.LazyFrame):
                try:
                    frame.sink_parquet(tmp, row_group_size=ROW_GROUP_ROWS)
                except Exception:
                    if _disk_nearly_full(path.parent):
                        raise
                    # some plans cannot stream; fall back to in-memory
                    frame.collect().write_parquet(tmp, row_group_size=ROW_GROUP_ROWS)
            else:
                frame.write_parquet(tmp, row_group_size=ROW_GROUP_ROWS)
        except Exception as exc:
            # polars reports a short write as a parquet/compute error, not as OSError(ENOSPC)
            if _disk_nearly_full(path.parent):
                raise UserError(f"no space left on device while writing {path}") from exc
            raise


def _disk_nearly_full(folder: Path, margin: int = 1 << 20) -> bool:
    try:
        return shutil.disk_usage(folder).free < margin
    except OSError:
        return False


def _drops(path: Path) -> dict[str, int]:
    """Rejected rows per reason, one row group at a time (bounded memory on any table length)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    counts: dict[str, int] = {}
    with pq.ParquetFile(path) as file:
        for batch in file.iter_batches(batch_size=CHUNK_ROWS, columns=["reason"]):
            for entry in pc.value_counts(batch.column(0)).to_pylist():
                counts[str(entry["values"])] = counts.get(str(entry["values"]), 0) + entry["counts"]
    return dict(sorted(counts.items()))


def _log_event(run_dir: Path, event: dict) -> None:
    """One line of .kbench/events.jsonl, and the same milestone in the log."""
    LOG.info("stage %s: %s", event["stage"], ", ".join(f"{k} {v}" for k, v in event.items() if k != "stage"))
    with open(run_dir / ".kbench" / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(event) + "\n")


def run_recipe(
    recipe: Recipe,
    run_dir: str | Path,
    *,
    options: dict[str, Any] | None = None,
    cache_dir: Path | None = None,
    data_dir: Path | None = None,
    on_stage: Callable[[int, int, StageReport], None] | None = None,
    executor: Executor | None = None,
) -> RunResult:
    """Run `recipe` into `run_dir`. Row-wise stages go through `executor` (default: this process);
    the result does not depend on which one."""
    import polars as pl

    executor = executor or LocalExecutor()

    run_dir = Path(run_dir).resolve()
    data_dir = check_data_root(recipe.path, recipe.data_refs, data_dir)
    ctx = StageContext(
        recipe_path=recipe.path,
        run_dir=run_dir,
        seed=recipe.header.seed,
        cache_dir=cache_dir or default_cache_dir(),
        options=dict(options or {}),
        dataset_name=recipe.header.name,
        dataset_version=recipe.header.version,
        config_name=recipe.header.config,
        data_dir=data_dir,
        protocol=construction_protocol(recipe.header.protocol),
    )
    result = RunResult(run_dir=run_dir)
    with run_lock(run_dir):
        prev_key = stable_hash({"recipe": recipe.header.model_dump(mode="json")})
        prev_output: Path | None = None
        inputs: list[dict[str, str]] = []
        for index, spec in enumerate(recipe.stages):
            stage = spec.stage_cls(spec.params, ctx)
            files = [Path(p) for p in stage.input_files()]
            file_hashes = []
            for f in files:
                if not f.exists():
                    raise UserError(f"{recipe.path} [{spec.id}]: input file {f} does not exist")
                digest = sha256_file(f)
                file_hashes.append(digest)
                inputs.append({"stage": spec.id, "path": ctx.display_path(f), "sha256": digest})
            key_parts = {
                "stage": spec.stage_cls.name,
                "version": spec.stage_cls.version,
                "params": spec.params.model_dump(mode="json"),
                "files": file_hashes,
                "previous": prev_key,
            }
            if stage.run_options():  # only when set, so keys without options stay as they were
                key_parts["options"] = stage.run_options()
            key = stable_hash(key_parts)
            stage_dir = run_dir / ".kbench" / "stages" / f"{index:02d}_{spec.id}"
            output_path = stage_dir / "output.parquet"
            marker_path = stage_dir / "done.json"
            rejected_path = run_dir / "rejected" / f"{spec.id}.parquet"

            report = _reuse(marker_path, output_path, key)
            if report is None:
                started = time.perf_counter()
                rows_in = count_rows(prev_output) if prev_output is not None else 0
                marker_path.unlink(missing_ok=True)
                if spec.stage_cls.row_wise:
                    rejects = executor.run_row_wise(
                        RowWiseJob(
                            stage=stage,
                            stage_id=spec.id,
                            key=key,
                            stage_dir=stage_dir,
                            input_path=prev_output,
                            output_path=output_path,
                            rejected_path=rejected_path,
                            chunk_rows=CHUNK_ROWS,
                            log=lambda event: _log_event(run_dir, event),
                        )
                    )
                    details = {}
                else:
                    out = stage.run(pl.scan_parquet(prev_output) if prev_output is not None else pl.LazyFrame())
                    _write_table(out.kept, output_path)
                    rejects = out.rejected is not None
                    details = out.details or {}
                    if rejects:
                        _write_table(out.rejected, rejected_path)
                dropped: dict[str, int] = {}
                if rejects:
                    dropped = _drops(rejected_path)
                else:
                    rejected_path.unlink(missing_ok=True)
                rows_out = count_rows(output_path)
                report = StageReport(
                    spec.id,
                    spec.stage_cls.name,
                    rows_in,
                    rows_out,
                    dropped,
                    False,
                    round(time.perf_counter() - started, 3),
                    details,
                )
                if not spec.stage_cls.source and getattr(spec.stage_cls, "preserves_rows", True):
                    lost = rows_in - rows_out - sum(dropped.values())
                    if lost != 0:
                        raise RuntimeError(f"stage {spec.id!r} lost {lost} rows without a reason (bug in the stage)")
                write_json(marker_path, {"key": key, "report": report.stats()})
                _log_event(run_dir, {"stage": spec.id, "action": "computed"})
            else:
                _log_event(run_dir, {"stage": spec.id, "action": "reused"})
            result.stages.append(report)
            if on_stage:
                on_stage(index, len(recipe.stages), report)
            prev_key, prev_output = key, output_path
            # from the report's details, so a reused stage records the same departures as a computed one
            ctx.protocol = add_stage_deviations(ctx.protocol, stage.deviations(report.details), spec.id)

        result.config_hash = prev_key
        write_json(
            run_dir / "stats.json",
            {
                "dataset": recipe.header.name,
                "version": recipe.header.version,
                "config_hash": prev_key,
                "final_rows": result.stages[-1].rows_out if result.stages else 0,
                "stages": [r.stats() for r in result.stages],
            },
        )
        write_json(
            run_dir / "manifest.json",
            {
                "kbench_manifest_version": 1,
                "dataset": recipe.header.name,
                "version": recipe.header.version,
                "recipe_file": recipe.path.name,
                "recipe": recipe.raw,
                "resolved": recipe.resolved(),
                "data_dir": str(data_dir) if data_dir is not None else None,
                "inputs": inputs,
                "packages": package_versions(),
                "config_hash": prev_key,
                "command": f"kbench build {recipe.path.name}",
                "executor": executor.name,
                "protocol": ctx.protocol.block(),
                # what each check ran against (a store from the inputs, an import, an endpoint) and which judge model
                **{k + "s": {r.id: r.details[k] for r in result.stages if k in r.details} for k in ("knowledge_source", "judge")},
            },
        )
    return result


def _reuse(marker_path: Path, output_path: Path, key: str) -> StageReport | None:
    if not marker_path.exists() or not output_path.exists():
        return None
    try:
        marker = json.loads(marker_path.read_text())
    except (OSError, json.JSONDecodeError):
        return None  # a damaged marker means: compute again
    if marker.get("key") != key:
        return None
    s = marker["report"]
    return StageReport(s["id"], s["stage"], s["rows_in"], s["rows_out"], s["dropped"], True, 0.0, s.get("details", {}))
