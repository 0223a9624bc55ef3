"""Source stage `load_triplets`: a triplet table you already have (parquet) -> the triplet table.

For triples from another extractor or a knowledge-graph export, to run through the MAPLE tail
(`link_wikidata`, `quality_filters`, `triplets_to_facts`, ...) without `extract_rebel`. `path` is
a parquet file with at least the string columns `triplet_id`, `subject`, `relation_label` and
`object`. The other columns of `kbench.construct.triplets` are optional and added when missing: null,
except `origin` ("table") and `object_kind` ("entity"; mark dates and quantities "literal" so
`link_wikidata` rejects them with a reason). Present ones are cast to the triplet table's types
(a column that cannot be is an `InputError` naming the file and column); extra columns travel on.

Rejected: `missing_value`, a row whose triplet_id, subject, relation_label or object is null or
empty. Row-wise: the file is read `kbench.construct.runner.CHUNK_ROWS` rows at a time, so a table of
any length loads in bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kbench.construct.stage import Stage, StageOutput, StageParams, filter_with_reason, register_stage
from kbench.construct.triplets import triplet_schema
from kbench.errors import InputError

REQUIRED = ("triplet_id", "subject", "relation_label", "object")
DEFAULTS = {"origin": "table", "object_kind": "entity"}


@register_stage
class LoadTriplets(Stage):
    name = "load_triplets"
    source = True
    row_wise = True

    class Params(StageParams):
        path: str

    def input_files(self) -> list[Path]:
        return [self.ctx.resolve(self.params.path)]

    def source_chunks(self, rows: int) -> Iterator:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from kbench.construct.chunks import parquet_chunks

        path = self.ctx.resolve(self.params.path)
        try:
            columns = pq.read_schema(path).names
        except (pa.ArrowException, OSError) as exc:
            raise InputError(path, f"not a readable parquet file: {exc}") from exc
        missing = [c for c in REQUIRED if c not in columns]
        if missing:
            raise InputError(path, f"missing required column(s) {', '.join(missing)} (has: {', '.join(columns)})")
        for chunk in parquet_chunks(path, rows):
            yield self._conform(chunk, path)

    def _conform(self, chunk, path: Path):
        """Add the missing triplet-table columns and cast the present ones to their types."""
        import polars as pl

        schema = triplet_schema()
        for column, dtype in schema.items():
            if column not in chunk.columns:
                chunk = chunk.with_columns(pl.lit(DEFAULTS.get(column), dtype=dtype).alias(column))
            elif chunk.schema[column] != dtype:
                try:
                    chunk = chunk.with_columns(pl.col(column).cast(dtype, strict=True))
                except pl.exceptions.PolarsError as exc:
                    raise InputError(path, f"column cannot be read as {dtype}: {exc}", key=column) from exc
        extra = [c for c in chunk.columns if c not in schema]
        return chunk.select(*schema, *extra)

    def run(self, table) -> StageOutput:
        import polars as pl

        empty = pl.any_horizontal(pl.col(c).is_null() | (pl.col(c).str.strip_chars() == "") for c in REQUIRED)
        return filter_with_reason(table, pl.when(empty).then(pl.lit("missing_value")))
