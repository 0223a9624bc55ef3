"""The default executor: a row-wise stage runs chunk by chunk in this process (no Ray needed)."""

from __future__ import annotations

from kbench.construct.chunks import parquet_chunks, run_chunked
from kbench.construct.executors import EXECUTORS, RowWiseJob
from kbench.errors import UserError


@EXECUTORS.register("local")
class LocalExecutor:
    name = "local"

    def __init__(self, address: str | None = None, workers: int | None = None, shard_rows: int | None = None):
        if address or workers or shard_rows:
            raise UserError("--ray-address, --workers and --shard-rows need --executor ray")

    def run_row_wise(self, job: RowWiseJob) -> bool:
        import polars as pl

        if job.stage.source:
            chunks = job.stage.source_chunks(job.chunk_rows)
        elif job.input_path is not None:
            chunks = parquet_chunks(job.input_path, job.chunk_rows)
        else:
            chunks = iter([pl.DataFrame()])
        return run_chunked(job.stage, job.stage_id, chunks, job.output_path, job.rejected_path)

    def close(self) -> None:
        pass
