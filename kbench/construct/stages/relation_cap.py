"""Stage `relation_cap`: keep at most `max_per_relation` facts per relation, a seeded sample.

Which rows survive is decided by a seeded sha256 of each row's `id`: within each group (by
default the `relation` column) the rows with the smallest sha256(f"{seed}:{id}") are kept. This
is a uniform random sample that depends only on the seed and the ids, never on row order or the
polars version. `seed` defaults to the recipe's pipeline seed. `by` may add columns (e.g.
["source", "relation"] caps each source's share of a relation separately). Dropped rows get
reason `relation_cap`; kept rows keep their input order.
"""

from __future__ import annotations

import hashlib
from typing import Optional

from pydantic import Field

from kbench.construct.stage import Stage, StageOutput, StageParams, filter_with_reason, register_stage


def seeded_key(seed: int, row_id: str) -> str:
    return hashlib.sha256(f"{seed}:{row_id}".encode()).hexdigest()


@register_stage
class RelationCap(Stage):
    name = "relation_cap"

    class Params(StageParams):
        max_per_relation: int = Field(default=300, ge=1)
        by: list[str] = Field(default_factory=lambda: ["relation"], min_length=1)
        seed: Optional[int] = None

    def deviations(self, details: dict) -> list:
        from kbench.protocol import Deviation

        if self.params.max_per_relation == 300 and self.params.by == ["relation"]:
            return []
        return [
            Deviation(
                id="relation-cap",
                paper="MAPLE caps each relation at 300 instances",
                kbench=f"at most {self.params.max_per_relation} rows per {' and '.join(self.params.by)} (a seeded sample)",
                effect="which facts are kept and the weight of each relation in every mean",
            )
        ]

    def run(self, table) -> StageOutput:
        import polars as pl

        seed = self.ctx.seed if self.params.seed is None else self.params.seed
        keyed = table.with_columns(pl.col("id").map_elements(lambda i: seeded_key(seed, i), return_dtype=pl.Utf8).alias("__key"))
        rank = pl.col("__key").rank("ordinal").over(self.params.by)
        out = filter_with_reason(
            keyed, pl.when(rank > self.params.max_per_relation).then(pl.lit("relation_cap")).otherwise(pl.lit(None, pl.Utf8))
        )
        return StageOutput(kept=out.kept.drop("__key"), rejected=out.rejected.drop("__key"))
