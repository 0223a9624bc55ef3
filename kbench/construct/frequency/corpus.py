"""Frequency source `corpus_count`: occurrences of the entity's name in a corpus (infini-gram index,
`kbench.sources.corpus_index`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from kbench.construct.frequency import FREQUENCY_SOURCES, FrequencySource, SourceOptions
from kbench.sources.corpus_index import CorpusIndex, build_index, corpus_files


@FREQUENCY_SOURCES.register("corpus_count")
class CorpusCount(FrequencySource):
    """Frequency source `corpus_count`: occurrences of the entity's name in a corpus (infini-gram)."""

    name = "corpus_count"

    class Options(SourceOptions):
        corpus: str
        entity: Literal["subject", "object"] = "subject"
        cpus: int = 1
        mem_gb: int = 2

    def input_files(self) -> list[Path]:
        return corpus_files(self.ctx.resolve(self.options.corpus))

    def frequency(self, table):
        import polars as pl

        o = self.options
        index = CorpusIndex(build_index(self.ctx.resolve(o.corpus), self.ctx.cache_dir, cpus=o.cpus, mem_gb=o.mem_gb))
        names = [n for n in table.select(pl.col(o.entity).unique()).collect().to_series().to_list() if n]
        lookup = pl.LazyFrame(
            {"__name": names, "frequency": [float(index.count(n)) for n in names]},
            schema={"__name": pl.String, "frequency": pl.Float64},
        )
        return table.join(lookup, left_on=o.entity, right_on="__name", how="left", maintain_order="left")
