"""Stage `frequency_bin`: label facts head / torso / tail by entity frequency, drop the buffers.

The frequency comes from a pluggable source (`kbench.sources.frequency`): `evidence_count`
(the T-REx evidence column), `counts_table` (a local qid -> count table), or any source added
through that module's hook. It is written to the `frequency` column.

Binning (REFERENCE.md, MAPLE): the rows with a known frequency are ranked by frequency,
highest first; ties are broken by `id` ascending, so the result never depends on input order.
With n ranked rows and `percentages` = [head, buffer, torso, buffer, tail] (default
10/20/40/20/10), the cumulative cut points are c_k = floor(n * cum_k / 100) (exact arithmetic),
and the row at rank position i (0-based) falls in the first segment k with i < c_k. Example,
n = 25: cuts 2, 7, 17, 22, 25 -> 2 head, 5 buffer, 10 torso, 5 buffer, 3 tail. Rows with equal
frequency can land on both sides of a cut; the id decides.

Drops: buffer rows (reason `frequency_buffer`); rows with an unknown (null) frequency are
dropped with reason `frequency_unknown` when `missing = "drop"` (default), or kept with a null
`frequency_bin` when `missing = "keep"` (e.g. training facts that have no frequency). Kept rows
keep their input order.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from kbench.build.stage import Stage, StageOutput, StageParams, filter_with_reason, register_stage
from kbench.sources.frequency import frequency_sources, make_source

BIN_NAMES = ("head", "buffer", "torso", "buffer", "tail")


def bin_cuts(n: int, percentages: list[float]) -> list[int]:
    """Cumulative cut points floor(n * cum% / 100) for the five segments."""
    total, cuts = Fraction(0), []
    for pct in percentages:
        total += Fraction(str(pct))
        cuts.append(int(n * total / 100))
    return cuts


@register_stage
class FrequencyBin(Stage):
    name = "frequency_bin"

    class Params(StageParams):
        source: str = "evidence_count"
        options: dict[str, Any] = Field(default_factory=dict)
        percentages: list[float] = Field(default_factory=lambda: [10, 20, 40, 20, 10])
        missing: Literal["drop", "keep"] = "drop"

        @field_validator("percentages")
        @classmethod
        def _five_segments(cls, v: list[float]) -> list[float]:
            if len(v) != 5 or any(p < 0 for p in v) or sum(Fraction(str(p)) for p in v) != 100:
                raise ValueError("percentages must be 5 numbers >= 0 (head, buffer, torso, buffer, tail) summing to 100")
            return v

        @model_validator(mode="after")
        def _known_source(self):
            sources = frequency_sources()
            if self.source not in sources:
                raise ValueError(f"unknown frequency source {self.source!r}; known: {', '.join(sorted(sources))}")
            options_model = sources[self.source].Options
            try:  # unknown or missing options fail when the recipe is loaded, not mid-build
                options_model.model_validate(self.options)
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                raise ValueError(f"options.{where}: {err['msg']} (options of source {self.source!r}: "
                                 f"{', '.join(options_model.model_fields) or 'none'})") from None
            return self

    def _source(self):
        return make_source(self.params.source, self.params.options, self.ctx)

    def input_files(self) -> list[Path]:
        return self._source().input_files()

    def run(self, table) -> StageOutput:
        import polars as pl

        if "frequency" in table.collect_schema().names():
            table = table.drop("frequency")
        frame = self._source().frequency(table).with_row_index("__row").collect()
        ranked = (frame.filter(pl.col("frequency").is_not_null())
                  .sort(["frequency", "id"], descending=[True, False])
                  .with_row_index("__pos"))
        cuts = bin_cuts(ranked.height, self.params.percentages)
        label = pl.when(pl.col("__pos") < cuts[0]).then(pl.lit(BIN_NAMES[0]))
        for cut, bin_name in zip(cuts[1:], BIN_NAMES[1:]):
            label = label.when(pl.col("__pos") < cut).then(pl.lit(bin_name))
        ranked = ranked.with_columns(label.alias("frequency_bin")).drop("__pos")
        unknown = frame.filter(pl.col("frequency").is_null()).with_columns(pl.lit(None, pl.Utf8).alias("frequency_bin"))
        binned = pl.concat([ranked, unknown]).sort("__row").drop("__row")

        reason = pl.when(pl.col("frequency_bin") == "buffer").then(pl.lit("frequency_buffer"))
        if self.params.missing == "drop":
            reason = reason.when(pl.col("frequency").is_null()).then(pl.lit("frequency_unknown"))
        return filter_with_reason(binned.lazy(), reason.otherwise(pl.lit(None, pl.Utf8)))
