"""The Stage contract and the stage registry.

A stage reads a table and writes a table. Each stage is one class, registered by name at its
definition with `@register_stage`, with a pydantic `Params` model that forbids unknown keys.

    @register_stage
    class RelationCap(Stage):
        name = "relation_cap"

        class Params(StageParams):
            max_per_relation: int = 300

        def run(self, table: pl.LazyFrame) -> StageOutput:
            ...

Contract of `run`:
  * input: the previous stage's kept rows as a `pl.LazyFrame` (an empty frame for the first stage);
  * output: `StageOutput(kept, rejected)`. `kept` is the table passed on. `rejected` (optional)
    holds dropped rows with a string column `reason`; the runner counts drops by reason and
    writes them to `rejected/<stage>.parquet`. `details` (optional) is a JSON-serialisable dict
    written under the stage's entry in stats.json (and rendered in the data card). Rows must never vanish without a reason:
    rows_in == rows_out + rows_rejected is checked for non-source stages.
  * a stage that reads files lists them in `input_files()` so their sha256 joins the resume key
    and the manifest.
  * a stage that stands in for a step of the paper's procedure says so in `deviations(details)`:
    one `kbench.protocol.Deviation` per departure, computed from its params, the run options and
    what it found (`details`, its StageOutput.details; `{}` for row-wise stages, whose chunks keep
    none). The runner joins them into the dataset's protocol block (manifest.json, the card).

Whole-table stages (`row_wise = False`, the default) get the entire table and always run in the
build's own process. Row-wise stages (`row_wise = True`): output rows depend only on each input row, plus fixed-size
lookups (an index, a template file). No ranking, dedup, capping or grouping across rows. The runner
then calls `run` once per chunk of the input (in order, on the same instance) and appends the
chunks' outputs, so memory is bounded by the chunk size, not the table's length. Such a stage loads
its expensive state (indexes, templates) once per instance (e.g. `functools.cached_property`), not
in every `run`. The Ray executor (`kbench/construct/executors/ray.py`) calls `run` on shards of the
input in other processes, on other machines: the output rows of a chunk must not depend on the
chunks seen before it. A row-wise *source* stage also implements `source_chunks`: its own input, chunk by
chunk, each passed to `run`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from kbench.registry import Registry

if TYPE_CHECKING:  # polars is imported lazily to keep `kbench --help` fast
    from collections.abc import Iterator

    import polars as pl

    from kbench.construct.context import StageContext
    from kbench.protocol import Deviation


class StageParams(BaseModel):
    """Base of every stage's parameters: unknown keys are errors, never ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass
class StageOutput:
    kept: Any  # pl.LazyFrame | pl.DataFrame
    rejected: Any = None  # pl.LazyFrame | pl.DataFrame with a `reason` column, or None
    #: What a reader of stats.json needs beyond row counts (e.g. where the frequency cuts fell,
    #: how many entities had no pageviews): JSON-serialisable, deterministic (no timings).
    details: Any = None  # dict | None


class Stage:
    name: ClassVar[str] = ""
    Params: ClassVar[type[StageParams]] = StageParams
    #: A source stage creates rows from files and ignores its input table.
    source: ClassVar[bool] = False
    #: Output rows depend only on each input row, plus fixed-size lookups: the runner runs it chunk by chunk.
    row_wise: ClassVar[bool] = False
    #: Bump when a code change alters the output, so old resume markers stop matching.
    version: ClassVar[int] = 1

    def __init__(self, params: StageParams, ctx: StageContext):
        self.params = params
        self.ctx = ctx

    def input_files(self) -> list[Path]:
        """Files this stage reads (hashed into the resume key and listed in the manifest)."""
        return []

    def run_options(self) -> dict[str, Any]:
        """Run-wide options (`ctx.options`) that change this stage's output; they join the resume key.

        E.g. `{"sparql_endpoint": url}`: a build against another endpoint must not reuse the stage.
        """
        return {}

    def deviations(self, details: dict[str, Any]) -> list[Deviation]:
        """Where this step departs from the paper's procedure (none: faithful, or no paper step)."""
        return []

    def model_device(self) -> str | None:
        """The device of the model this stage runs ("cuda", "cpu", "auto"), None when it runs none.

        The Ray executor runs a model stage in an actor pool (the model loads once per worker) and
        asks Ray for a GPU per actor when this is cuda."""
        return None

    def source_chunks(self, rows: int) -> Iterator[pl.DataFrame]:  # pragma: no cover - interface
        """A row-wise source stage's input, at most `rows` rows at a time, in order. An empty input
        yields one empty frame with the input's columns, so the output still gets its schema."""
        raise NotImplementedError

    def run(self, table: pl.LazyFrame) -> StageOutput:  # pragma: no cover - interface
        raise NotImplementedError


STAGES: Registry[type[Stage]] = Registry("stage", package="kbench.construct.stages")


def register_stage(cls: type[Stage]) -> type[Stage]:
    """Class decorator: make a stage available to recipes under `cls.name`."""
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} has no `name`")
    STAGES.add(cls.name, cls)
    return cls


def stage_registry() -> dict[str, type[Stage]]:
    """All registered stages (the registry imports every module of `kbench.construct.stages`)."""
    return STAGES.items()


def filter_with_reason(table: pl.LazyFrame, reason: pl.Expr) -> StageOutput:
    """Split `table` by a string expression: null keeps the row, a string names why it is dropped.

    This is the one way filters drop rows, so every drop is counted with its reason.
    """
    import polars as pl

    tagged = table.with_columns(reason.alias("__reason"))
    kept = tagged.filter(pl.col("__reason").is_null()).drop("__reason")
    rejected = tagged.filter(pl.col("__reason").is_not_null()).rename({"__reason": "reason"})
    return StageOutput(kept=kept, rejected=rejected)
