"""Frequency sources over what the facts already carry: T-REx evidence counts, a local counts table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kbench.construct.frequency import FREQUENCY_SOURCES, FrequencySource, SourceOptions
from kbench.errors import InputError

if TYPE_CHECKING:
    import polars as pl


@FREQUENCY_SOURCES.register("evidence_count")
class EvidenceCount(FrequencySource):
    """The fact's own T-REx evidence count (`evidence_count` column; null stays unknown)."""

    name = "evidence_count"

    class Options(SourceOptions):
        column: str = "evidence_count"

    def frequency(self, table):
        import polars as pl

        if self.options.column not in table.collect_schema().names():
            raise InputError(
                self.ctx.recipe_path, f"the table has no column {self.options.column!r}", key="frequency_bin.options.column"
            )
        return table.with_columns(pl.col(self.options.column).cast(pl.Float64).alias("frequency"))


@FREQUENCY_SOURCES.register("counts_table")
class CountsTable(FrequencySource):
    """Counts per entity from a local table: TSV `qid<TAB>count` (an optional header line
    `qid<TAB>count`) or parquet with columns `qid`, `count`. Entities not in the table are unknown."""

    name = "counts_table"

    class Options(SourceOptions):
        path: str
        entity: Literal["subject", "object"] = "subject"

    def _path(self) -> Path:
        return self.ctx.resolve(self.options.path)

    def input_files(self) -> list[Path]:
        return [self._path()]

    def _read(self) -> pl.LazyFrame:
        import polars as pl

        from kbench.construct.stages.load_lama import QID

        path = self._path()
        if path.suffix == ".parquet":
            frame = pl.read_parquet(path)
            missing = {"qid", "count"} - set(frame.columns)
            if missing:
                raise InputError(path, f"missing column(s) {', '.join(sorted(missing))}; expected qid, count")
            pairs = list(zip(frame["qid"].to_list(), frame["count"].to_list()))
            where = lambda i: {"key": f"row {i}"}  # noqa: E731
        else:
            pairs, lines = [], []
            with open(path, encoding="utf-8") as fh:
                for lineno, line in enumerate(fh, start=1):
                    if not line.strip() or (lineno == 1 and line.strip().lower() == "qid\tcount"):
                        continue
                    parts = line.rstrip("\r\n").split("\t")
                    if len(parts) != 2:
                        raise InputError(path, "expected two tab-separated columns: qid, count", line=lineno)
                    try:
                        count = float(parts[1])
                    except ValueError:
                        raise InputError(path, f"count {parts[1]!r} is not a number", line=lineno) from None
                    pairs.append((parts[0], count))
                    lines.append(lineno)
            where = lambda i: {"line": lines[i]}  # noqa: E731
        seen: set[str] = set()
        for i, (qid, count) in enumerate(pairs):
            if not isinstance(qid, str) or not QID.match(qid):
                raise InputError(path, f"{qid!r} is not a Wikidata item id", **where(i))
            if count is None or count < 0:
                raise InputError(path, f"count must be a number >= 0, got {count!r}", **where(i))
            if qid in seen:
                raise InputError(path, f"{qid} is listed twice", **where(i))
            seen.add(qid)
        if not pairs:
            raise InputError(path, "file is empty")
        return pl.LazyFrame(
            {"__qid": [q for q, _ in pairs], "frequency": [float(c) for _, c in pairs]},
            schema={"__qid": pl.Utf8, "frequency": pl.Float64},
        )

    def frequency(self, table):
        return table.join(self._read(), left_on=f"{self.options.entity}_id", right_on="__qid", how="left", maintain_order="left")
