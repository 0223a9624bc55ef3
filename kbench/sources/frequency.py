"""Pluggable frequency sources for the `frequency_bin` stage.

A frequency source turns a fact table into one number per row (how often the fact's entity is
seen: evidence sentences, counts in a table, pageviews, corpus hits). Contract:

    @register_frequency_source
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

HOOK for further sources (Wikimedia pageviews, infini-gram corpus counts): write the class in
its own module under `kbench/sources/`, decorate it with `@register_frequency_source`, and add
the module's import path to `SOURCE_MODULES` below; `frequency_sources()` imports them all, so
recipes can name the source and its options are validated when the recipe is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from kbench.errors import InputError

if TYPE_CHECKING:
    import polars as pl

    from kbench.build.context import StageContext

#: Modules that define further frequency sources (imported lazily by `frequency_sources()`).
SOURCE_MODULES: tuple[str, ...] = ("kbench.sources.pageviews", "kbench.sources.mention_counts", "kbench.sources.corpus_index")


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


_SOURCES: dict[str, type[FrequencySource]] = {}


def register_frequency_source(cls: type[FrequencySource]) -> type[FrequencySource]:
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} has no `name`")
    if cls.name in _SOURCES and _SOURCES[cls.name] is not cls:
        raise TypeError(f"duplicate frequency source {cls.name!r}")
    _SOURCES[cls.name] = cls
    return cls


def frequency_sources() -> dict[str, type[FrequencySource]]:
    import importlib

    for module in SOURCE_MODULES:
        importlib.import_module(module)
    return dict(_SOURCES)


@register_frequency_source
class EvidenceCount(FrequencySource):
    """The fact's own T-REx evidence count (`evidence_count` column; null stays unknown)."""

    name = "evidence_count"

    class Options(SourceOptions):
        column: str = "evidence_count"

    def frequency(self, table):
        import polars as pl

        if self.options.column not in table.collect_schema().names():
            raise InputError(self.ctx.recipe_path, f"the table has no column {self.options.column!r}",
                             key="frequency_bin.options.column")
        return table.with_columns(pl.col(self.options.column).cast(pl.Float64).alias("frequency"))


@register_frequency_source
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

        from kbench.build.stages.load_lama import QID

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
        return pl.LazyFrame({"__qid": [q for q, _ in pairs], "frequency": [float(c) for _, c in pairs]},
                            schema={"__qid": pl.Utf8, "frequency": pl.Float64})

    def frequency(self, table):
        return table.join(self._read(), left_on=f"{self.options.entity}_id", right_on="__qid",
                          how="left", maintain_order="left")


def make_source(name: str, options: dict, ctx: StageContext) -> FrequencySource:
    cls = frequency_sources()[name]
    return cls(cls.Options.model_validate(options), ctx)

