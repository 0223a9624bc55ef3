"""Stage `split`: assign every row to train / dev / test.

Units are rows (`mode = "random"`) or whole relations (`mode = "relation"`: relation-disjoint
splits for out-of-distribution studies; XTEVAL puts 60% of relations in train). Units are
ordered by sha256(f"{seed}:{unit}") and cut at floor(n * train) and floor(n * (train + dev)),
so the split sizes are exact and depend only on the seed and the ids (`seed` defaults to the
recipe's seed).

Rows that already carry a split from their source (e.g. AutoPrompt train/dev facts, column
`split` not null) keep it when `keep_existing` is true (default) and only the other rows are
assigned; with `keep_existing = false` every row is assigned afresh (needed for a strictly
relation-disjoint split when presets exist). Rows are never dropped and keep their order.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal, Optional

from pydantic import Field, model_validator

from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage
from kbench.construct.stages.relation_cap import seeded_key
from kbench.errors import UserError

SPLITS = ("train", "dev", "test")


@register_stage
class Split(Stage):
    name = "split"

    class Params(StageParams):
        mode: Literal["random", "relation"] = "random"
        train: float = Field(default=0.8, ge=0, le=1)
        dev: float = Field(default=0.1, ge=0, le=1)
        test: float = Field(default=0.1, ge=0, le=1)
        keep_existing: bool = True
        seed: Optional[int] = None

        @model_validator(mode="after")
        def _fractions_sum_to_one(self):
            if sum(Fraction(str(f)) for f in (self.train, self.dev, self.test)) != 1:
                raise ValueError(f"train + dev + test must be 1, got {self.train} + {self.dev} + {self.test}")
            return self

    def _assign(self, units: list[str]) -> dict[str, str]:
        seed = self.ctx.seed if self.params.seed is None else self.params.seed
        ordered = sorted(set(units), key=lambda u: (seeded_key(seed, u), u))
        n = len(ordered)
        cut_train = int(n * Fraction(str(self.params.train)))
        cut_dev = int(n * (Fraction(str(self.params.train)) + Fraction(str(self.params.dev))))
        return {u: "train" if i < cut_train else "dev" if i < cut_dev else "test" for i, u in enumerate(ordered)}

    def run(self, table) -> StageOutput:
        import polars as pl

        if "split" not in table.collect_schema().names():
            table = table.with_columns(pl.lit(None, pl.Utf8).alias("split"))
        frame = table.collect()
        preset = frame["split"].is_not_null() if self.params.keep_existing else pl.Series([False] * frame.height)
        bad = frame.filter(preset & ~pl.col("split").is_in(SPLITS))
        if bad.height:
            raise UserError(f"split: rows carry an unknown split {bad['split'][0]!r} (expected one of {', '.join(SPLITS)})")
        unit_col = "id" if self.params.mode == "random" else "relation"
        units = frame.filter(~preset)[unit_col].to_list()
        assigned = frame[unit_col].replace_strict(self._assign(units), default=None, return_dtype=pl.Utf8)
        return StageOutput(
            kept=frame.with_columns(pl.when(preset).then(pl.col("split")).otherwise(assigned).alias("split")).lazy()
        )
