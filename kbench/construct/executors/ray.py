"""The Ray executor: a row-wise stage's input, cut into fixed shards, runs on a Ray cluster.

Shards are fixed row ranges of the stage's input table (`shard_rows` rows each, the last one
shorter), so they depend on the table alone, never on how many workers there are. Each shard runs
as one Ray task (`max_retries`: a worker or node that dies mid-shard has its shard rerun
elsewhere) that reads its rows from the previous stage's output, runs the stage on them chunk by
chunk exactly as the local executor does, and writes

    .kbench/stages/NN_<id>/shards/SSSSS/kept.parquet, rejected.parquet, done.json

with `done.json` last (it holds the stage's resume key and the shard's row range). The driver then
appends the shards' files in shard order into the stage's output: the same rows, order, types and
rejected rows as the local executor's. A rerun after a killed build reuses every shard whose
marker matches and computes only the rest; the shard folders are removed once the stage's output
is complete.

A stage that runs a model (`Stage.model_device()` is not None: `extract_rebel`) runs in a
`ray.util.ActorPool` instead: one actor per worker loads the model once and takes shard after
shard; each actor asks Ray for a GPU when the stage's device is cuda (or "auto" on a cluster that
has GPUs). Ray restarts an actor whose node died and retries its shard (`max_restarts`,
`max_task_retries`; the tests here kill nodes under tasks, not under actors). A source stage
(it reads its own files) has its input read on the driver into `source.parquet`, then sharded the
same way. Stages that need the whole table never come here: the runner runs them itself.

Every node must see the run directory, the recipe's input files and the cache at the same paths
(one machine, or a shared filesystem: NFS, EFS, a mounted bucket); the kbench code is shipped to
the workers with the job (`runtime_env` `py_modules`), so they run exactly the driver's version.
"""

from __future__ import annotations

import shutil
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from kbench.construct.chunks import ChunkWriter, count_rows, parquet_chunks, run_chunked
from kbench.construct.executors import EXECUTORS, RowWiseJob
from kbench.errors import UserError, require
from kbench.io import write_json

#: Rows per shard: the unit of distribution and of resume. 100k rows is five local chunks: enough
#: work to hide a task's start-up (a few ms, plus loading a stage's lookup tables once per worker
#: process), small enough that a 6M-row stage gives 60 shards to spread and to resume from.
DEFAULT_SHARD_ROWS = 100_000
#: Ray reruns a shard whose worker or node died (system failures only: a bug or bad input in a
#: stage fails the build at once, with its own error).
SHARD_RETRIES = 3


@dataclass(frozen=True)
class Shard:
    index: int
    start: int
    stop: int
    folder: Path

    @property
    def marker(self) -> Path:
        return self.folder / "done.json"

    def expected(self, key: str) -> dict:
        return {"key": key, "shard": self.index, "start": self.start, "stop": self.stop}


def run_shard(stage, stage_id: str, key: str, input_path: Path, shard: Shard, chunk_rows: int) -> dict:
    """Worker side: run `stage` over the shard's rows, write its files and then its marker."""
    kept, rejected = shard.folder / "kept.parquet", shard.folder / "rejected.parquet"
    chunks = parquet_chunks(input_path, chunk_rows, shard.start, shard.stop)
    rejects = run_chunked(stage, stage_id, chunks, kept, rejected)
    if not rejects:
        rejected.unlink(missing_ok=True)
    marker = {**shard.expected(key), "rejected": rejects}
    write_json(shard.marker, marker)
    return marker


#: The stage a worker process ran last, kept for its next shard of the same stage (same resume
#: key and context), so lookup tables (link indexes, alias tables) load once per worker process,
#: not once per shard.
_WORKER_STAGE: dict[tuple, object] = {}


def _shard_task(stage_cls, params, ctx, stage_id: str, key: str, input_path: Path, shard: Shard, chunk_rows: int) -> dict:
    which = (key, repr(ctx))
    stage = _WORKER_STAGE.get(which)
    if stage is None:
        _WORKER_STAGE.clear()
        stage = _WORKER_STAGE[which] = stage_cls(params, ctx)
    return _on_this_node(run_shard(stage, stage_id, key, input_path, shard, chunk_rows))


def _on_this_node(marker: dict) -> dict:
    """The marker plus the Ray node that computed it (for the events log: which shard ran where)."""
    import ray

    return {**marker, "node": ray.get_runtime_context().get_node_id()}


class _ShardActor:
    """Holds one configured (model) stage for its lifetime: the model loads once per actor."""

    def __init__(self, stage_cls, params, ctx):
        self.stage = stage_cls(params, ctx)

    def run(self, stage_id: str, key: str, input_path: Path, shard: Shard, chunk_rows: int) -> dict:
        return _on_this_node(run_shard(self.stage, stage_id, key, input_path, shard, chunk_rows))


@EXECUTORS.register("ray")
class RayExecutor:
    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, shard_rows: int | None = None):
        if workers is not None and workers < 1:
            raise UserError(f"--workers must be at least 1 (got {workers})")
        if shard_rows is not None and shard_rows < 1:
            raise UserError(f"--shard-rows must be at least 1 (got {shard_rows})")
        self.ray = require("ray", "builds with --executor ray", extra="ray")
        self.workers, self.shard_rows = workers, shard_rows or DEFAULT_SHARD_ROWS
        self.owns_ray = not self.ray.is_initialized()
        if address:
            _check_reachable(address)
        if self.owns_ray:
            import kbench

            # a Ray instance of our own (no address): no dashboard, and --workers CPUs when given
            kwargs = {"include_dashboard": False, **({"num_cpus": workers} if workers else {})} if address is None else {}
            try:
                self.ray.init(
                    address=address,
                    runtime_env={"py_modules": [str(Path(kbench.__file__).parent)]},
                    log_to_driver=False,
                    **kwargs,
                )
            except ConnectionError as exc:
                raise UserError(f"cannot connect to the Ray cluster at {address}: {exc}") from exc

    def close(self) -> None:
        if self.owns_ray:
            self.ray.shutdown()

    def run_row_wise(self, job: RowWiseJob) -> bool:
        if job.input_path is None and not job.stage.source:  # a first stage that is not a source: nothing to shard
            from kbench.construct.executors.local import LocalExecutor

            return LocalExecutor().run_row_wise(job)
        input_path = self._source_table(job) if job.stage.source else job.input_path
        total = count_rows(input_path)
        folder = job.stage_dir / "shards"
        shards = [
            Shard(i, start, min(start + self.shard_rows, total), folder / f"{i:05d}")
            for i, start in enumerate(range(0, total, self.shard_rows))
        ] or [Shard(0, 0, 0, folder / "00000")]
        markers = {s.index: m for s in shards if (m := _read_marker(s, job.key)) is not None}
        for index in sorted(markers):
            job.log({"stage": job.stage_id, "shard": index, "action": "reused"})
        pending = [s for s in shards if s.index not in markers]
        if pending:
            run = self._run_on_actors if job.stage.model_device() is not None else self._run_as_tasks
            for marker in run(job, input_path, pending):
                markers[marker["shard"]] = marker
                job.log({"stage": job.stage_id, "shard": marker["shard"], "action": "computed", "node": marker["node"]})
        rejects = _merge(job, shards, markers)
        shutil.rmtree(folder, ignore_errors=True)
        for leftover in ("source.parquet", "source.json"):
            (job.stage_dir / leftover).unlink(missing_ok=True)
        return rejects

    def _source_table(self, job: RowWiseJob) -> Path:
        """A source stage's input, read on the driver once (reused by a rerun with the same key)."""
        path, marker = job.stage_dir / "source.parquet", job.stage_dir / "source.json"
        if path.exists() and _json(marker) == {"key": job.key}:
            return path
        marker.unlink(missing_ok=True)
        with ExitStack() as files:
            writer = ChunkWriter(files, path, job.stage_id)
            for chunk in job.stage.source_chunks(job.chunk_rows):
                writer.write(chunk)
        write_json(marker, {"key": job.key})
        return path

    def _run_as_tasks(self, job: RowWiseJob, input_path: Path, pending: list[Shard]):
        """One Ray task per shard; with --workers N at most N in flight (Ray's 'limit pending
        tasks with ray.wait' pattern), else as many as the cluster has CPUs for."""
        ray = self.ray
        # SPREAD: shards go to every node of the cluster, not first to the driver's own node
        task = ray.remote(_shard_task).options(
            num_cpus=1, max_retries=SHARD_RETRIES, retry_exceptions=False, scheduling_strategy="SPREAD"
        )
        stage = job.stage
        args = [ray.put(x) for x in (type(stage), stage.params, stage.ctx)]
        limit = self.workers or len(pending)
        queue, in_flight = list(pending), []
        while queue or in_flight:
            while queue and len(in_flight) < limit:
                shard = queue.pop(0)
                in_flight.append(task.remote(*args, job.stage_id, job.key, input_path, shard, job.chunk_rows))
            ready, in_flight = ray.wait(in_flight, num_returns=1)
            yield self._get(ready[0])

    def _run_on_actors(self, job: RowWiseJob, input_path: Path, pending: list[Shard]):
        from ray.util import ActorPool

        ray, stage = self.ray, job.stage
        device = stage.model_device()
        resources = ray.cluster_resources()
        gpus = 1 if device.startswith("cuda") or (device == "auto" and resources.get("GPU", 0) > 0) else 0
        if gpus and not resources.get("GPU", 0):
            raise UserError(f"stage {job.stage_id!r} runs on {device} but the Ray cluster has no GPU")
        capacity = int(resources.get("GPU", 0)) if gpus else int(resources.get("CPU", 1))
        size = max(1, min(self.workers or capacity, capacity, len(pending)))
        actor = ray.remote(_ShardActor).options(
            num_cpus=1, num_gpus=gpus, max_restarts=SHARD_RETRIES, max_task_retries=SHARD_RETRIES
        )
        pool = ActorPool([actor.remote(type(stage), stage.params, stage.ctx) for _ in range(size)])
        results = pool.map_unordered(
            lambda a, shard: a.run.remote(job.stage_id, job.key, input_path, shard, job.chunk_rows), pending
        )
        while True:
            try:
                yield next(results)
            except StopIteration:
                return
            except self.ray.exceptions.RayTaskError as exc:
                raise _cause(exc) from None

    def _get(self, ref) -> dict:
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:
            raise _cause(exc) from None


def _check_reachable(address: str) -> None:
    """Fail at once on a HOST:PORT where nothing listens (Ray itself would wait for minutes)."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or "/" in address or not port.isdigit():
        return  # "auto", "ray://...": Ray resolves those itself
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise UserError(
            f"no Ray cluster answers at {address} ({exc.strerror or exc}); start one with "
            f"`ray start --head --port {port}` or check --ray-address"
        ) from exc


def _cause(exc) -> BaseException:
    """A stage's own error (bad input: UserError, exit code 2) as itself, anything else as Ray's."""
    return exc.cause if isinstance(exc.cause, UserError) else exc


def _merge(job: RowWiseJob, shards: list[Shard], markers: dict[int, dict]) -> bool:
    """Append the shards' kept (and rejected) files, in shard order, into the stage's outputs."""
    with ExitStack() as files:
        kept = ChunkWriter(files, job.output_path, job.stage_id)
        rejected = None
        for shard in shards:
            kept.append_file(shard.folder / "kept.parquet")
            if markers[shard.index]["rejected"]:
                rejected = rejected or ChunkWriter(files, job.rejected_path, job.stage_id)
                rejected.append_file(shard.folder / "rejected.parquet")
        return rejected is not None


def _json(path: Path):
    import json

    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _read_marker(shard: Shard, key: str) -> dict | None:
    """The shard's marker when it is finished for this stage key and row range, else None."""
    marker = _json(shard.marker)
    if not isinstance(marker, dict) or {k: marker.get(k) for k in shard.expected(key)} != shard.expected(key):
        return None
    if not (shard.folder / "kept.parquet").exists():
        return None
    return marker
