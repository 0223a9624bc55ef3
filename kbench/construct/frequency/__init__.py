"""Pluggable frequency sources for the `frequency_bin` stage (build plug-ins over the clients in
`kbench.sources`).

A frequency source turns a fact table into one number per row (how often the fact's entity is
seen: evidence sentences, counts in a table, pageviews, corpus hits). Contract:

    @FREQUENCY_SOURCES.register("my_source")
    class MySource(FrequencySource):
        name = "my_source"

        class Options(SourceOptions):       # the recipe's `options = {...}`; unknown keys are errors
            entity: Literal["subject", "object"] = "subject"

        def input_files(self) -> list[Path]: ...          # files read (resume key + manifest)
        def frequency(self, table: pl.LazyFrame) -> pl.LazyFrame: ...
            # returns `table` with a Float64 column `frequency` added, same rows, same order;
            # null means "unknown" (the stage drops or keeps such rows as configured).
            # it may also add a Utf8 column `frequency_drop`: a reason to drop the row whatever the
            # stage's `missing` says (e.g. `pageviews_missing`), null for rows to keep.
        def details(self) -> dict: ...                    # after `frequency`: counts for stats.json
        def run_options(self) -> dict: ...                # e.g. the SPARQL endpoint it asks

A further source is one module in this package (its outside-system client, if any, in
`kbench/sources/`), registered at its definition (the registry imports every module of this package), so
recipes can name the source and its options are validated when the recipe is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict

from kbench.registry import Registry

if TYPE_CHECKING:
    import polars as pl

    from kbench.construct.context import StageContext

FREQUENCY_SOURCES: Registry[type[FrequencySource]] = Registry("frequency source", package=__name__)


#: The optional column in which a source names why a row must be dropped (see the contract above).
DROP_COLUMN = "frequency_drop"


class SourceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FrequencySource:
    name: ClassVar[str] = ""
    Options: ClassVar[type[SourceOptions]] = SourceOptions

    def __init__(self, options: SourceOptions, ctx: StageContext):
        self.options = options
        self.ctx = ctx

    def input_files(self) -> list[Path]:
        return []

    def frequency(self, table: pl.LazyFrame) -> pl.LazyFrame:  # pragma: no cover - interface
        raise NotImplementedError

    def details(self) -> dict:
        """What the last `frequency` call found that a reader must know (written to stats.json)."""
        return {}

    def run_options(self) -> dict:
        """Run-wide options that change the frequencies (see `Stage.run_options`)."""
        return {}


def frequency_sources() -> dict[str, type[FrequencySource]]:
    return FREQUENCY_SOURCES.items()


def make_source(name: str, options: dict, ctx: StageContext) -> FrequencySource:
    cls = FREQUENCY_SOURCES.get(name)
    return cls(cls.Options.model_validate(options), ctx)
