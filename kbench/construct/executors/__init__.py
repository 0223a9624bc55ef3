"""Where a build's row-wise stages run: in this process (`local`, the default) or on a Ray cluster.

The runner owns everything else (resume keys, stage markers, stats, the manifest); an executor only
turns one row-wise stage's input into its kept and rejected files. Stages that need the whole
table (`Stage.row_wise = False`: ranking, capping, dedup, splits) always run in the runner's
process. Both executors give the same files: see `kbench/construct/executors/ray.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kbench.registry import Registry

#: name -> executor class, constructed as cls(address=..., workers=..., shard_rows=...); each
#: module of this package registers its own at the definition.
EXECUTORS: Registry[type] = Registry("executor", package=__name__)


@dataclass
class RowWiseJob:
    """One row-wise stage to run: its instance (already configured), where its input is (None for
    a source stage, which reads its own files) and where its outputs go."""

    stage: object  # kbench.construct.stage.Stage
    stage_id: str
    key: str  # the stage's resume key: shard markers of another key are stale
    stage_dir: Path  # the stage's hidden folder, for the executor's own bookkeeping (shards)
    input_path: Path | None
    output_path: Path
    rejected_path: Path
    chunk_rows: int
    log: Callable[[dict], None]  # appends one event to .kbench/events.jsonl


class Executor(Protocol):
    name: str

    def run_row_wise(self, job: RowWiseJob) -> bool:
        """Write `job.output_path` (and `job.rejected_path` when the stage rejects); return whether it rejected."""

    def close(self) -> None: ...


def make_executor(
    name: str, *, ray_address: str | None = None, workers: int | None = None, shard_rows: int | None = None
) -> Executor:
    return EXECUTORS.get(name)(address=ray_address, workers=workers, shard_rows=shard_rows)
