"""Stage `triplets_to_facts`: linked triplets -> the `Fact` columns that `to_questions` expects.

Adds `id` (the triplet id), `source` (`source_name`, default "rebel_" + the row's origin),
`evidence_count` (null: a triplet has no T-REx evidence list) and `template`, the relation's cloze
template with [X] (subject) and [Y] (object):
  * from `templates`, a JSONL file of `{"relation": "P..", "template": "..."}` lines (the LAMA
    `relations.jsonl` format, e.g. data:lama_trex/relations.jsonl), when it lists the
    relation;
  * else the generic "The <relation label> of [X] is [Y] ." built from the row's label.
Every other column (domain, document and sentence provenance, spans) is kept. No row is dropped.
Row-wise (the templates file is read once per run).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage
from kbench.errors import InputError
from kbench.io import iter_jsonl


def load_templates(path: Path) -> dict[str, str]:
    templates = {}
    for lineno, row in iter_jsonl(path, required=("relation", "template")):
        template = row["template"]
        if not isinstance(template, str) or template.count("[X]") != 1 or template.count("[Y]") != 1:
            raise InputError(path, "template must hold [X] and [Y] exactly once", line=lineno)
        templates[str(row["relation"])] = template
    return templates


@register_stage
class TripletsToFacts(Stage):
    name = "triplets_to_facts"
    row_wise = True

    class Params(StageParams):
        templates: str | None = None
        source_name: str | None = None

    def input_files(self) -> list[Path]:
        return [self.ctx.resolve(self.params.templates)] if self.params.templates else []

    @cached_property
    def _templates(self) -> dict[str, str]:
        return load_templates(self.ctx.resolve(self.params.templates)) if self.params.templates else {}

    def run(self, table) -> StageOutput:
        import polars as pl

        templates = self._templates
        generic = pl.lit("The ") + pl.col("relation_label") + pl.lit(" of [X] is [Y] .")
        source = pl.lit(self.params.source_name) if self.params.source_name else pl.lit("rebel_") + pl.col("origin")
        if templates:  # a join, not `replace_strict`: polars streams joins but not replace (flat memory)
            known = pl.LazyFrame(
                {"__relation": list(templates), "__template": list(templates.values())},
                schema={"__relation": pl.String, "__template": pl.String},
            )
            table = table.join(known, left_on="relation", right_on="__relation", how="left", maintain_order="left")
        else:
            table = table.with_columns(pl.lit(None, dtype=pl.String).alias("__template"))
        return StageOutput(
            kept=table.with_columns(
                pl.col("triplet_id").alias("id"),
                pl.col("__template").fill_null(generic).alias("template"),
                source.alias("source"),
                pl.lit(None, dtype=pl.Int64).alias("evidence_count"),
            ).drop("__template")
        )
