"""Frequency source `document_mentions`: how often an entity is mentioned in a document collection.

A local, deterministic stand-in for pageviews on the embedded demo: for REBEL-format documents
(see `kbench.sources.documents`), an entity's count is the number of its annotated mentions
(`entities[].uri`) over all documents. It measures salience *within that collection*, not
popularity on Wikipedia, so bins built from it are only as meaningful as the collection is large;
real builds use `pageviews`. Entities never mentioned get 0 (known: the collection was read).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Literal

from kbench.construct.frequency import FREQUENCY_SOURCES, FrequencySource, SourceOptions


@FREQUENCY_SOURCES.register("document_mentions")
class DocumentMentions(FrequencySource):
    name = "document_mentions"

    class Options(SourceOptions):
        documents: str
        entity: Literal["subject", "object"] = "subject"

    def input_files(self) -> list[Path]:
        from kbench.sources.documents import document_files

        return document_files(self.ctx.resolve(self.options.documents))

    def frequency(self, table):
        import polars as pl

        from kbench.sources.documents import iter_documents

        counts: Counter = Counter()
        for _, _, doc in iter_documents(self.ctx.resolve(self.options.documents), required=()):
            counts.update(str(e.get("uri")) for e in doc.get("entities") or [] if e.get("uri"))
        lookup = pl.LazyFrame(
            {"__qid": list(counts), "__mentions": [float(n) for n in counts.values()]},
            schema={"__qid": pl.String, "__mentions": pl.Float64},
        )
        column = f"{self.options.entity}_id"
        return (
            table.join(lookup, left_on=column, right_on="__qid", how="left", maintain_order="left")
            .with_columns(frequency=pl.col("__mentions").fill_null(0.0))
            .drop("__mentions")
        )
