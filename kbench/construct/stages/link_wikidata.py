"""Stage `link_wikidata`: surface forms -> Q-ids and relation labels -> P-ids.

Input: the triplet table (`extract_rebel` or `load_annotated_triplets`): subject, subject_id,
object, object_id, object_kind, relation, relation_label. Output: the same rows with
`subject_id`, `object_id` and `relation` filled, plus `link_method` ("annotated" when every id
came with the input, else "index").

Ids already present are kept when `keep_existing_ids` (default) and only format-checked;
missing ones are looked up by normalised name in the indexes of `kbench.sources.link_index`
(built from `documents` — REBEL-format JSONL whose titles, entity mentions and predicates give
name -> id pairs — and/or `titles_table` / `property_table` TSVs). Whether an id exists in
Wikidata is `verify_wikidata`'s job, not this stage's.

Rejected, first reason wins: `object_is_literal` (a date or quantity, no Q-id to ask about),
`invalid_id` (an id that is not `^[QP][1-9][0-9]*$`), `subject_ambiguous` / `object_ambiguous` /
`relation_ambiguous` (a name that two ids claim equally often), `subject_unlinked` / `object_unlinked`,
`relation_unlinked`, `self_loop` (subject and object are the same entity).

Row-wise: each row is linked on its own against the indexes, which are loaded once per run.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from kbench.construct.stage import Stage, StageOutput, StageParams, filter_with_reason, register_stage
from kbench.errors import UserError


@register_stage
class LinkWikidata(Stage):
    name = "link_wikidata"
    row_wise = True

    class Params(StageParams):
        documents: str | None = None
        titles_table: str | None = None
        property_table: str | None = None
        keep_existing_ids: bool = True

    def _paths(self) -> tuple[Path | None, Path | None, Path | None]:
        p = self.params
        if not (p.documents or p.titles_table or p.property_table):
            raise UserError("link_wikidata needs at least one of `documents`, `titles_table`, `property_table`")
        return tuple(self.ctx.resolve(x) if x else None for x in (p.documents, p.titles_table, p.property_table))

    def input_files(self) -> list[Path]:
        from kbench.sources.documents import document_files

        documents, titles, properties = self._paths()
        return (document_files(documents) if documents else []) + [p for p in (titles, properties) if p]

    @cached_property
    def _indexes(self):
        """The entity and property indexes, found (or built) and read once, not once per chunk."""
        import polars as pl

        from kbench.sources.link_index import build_indexes

        documents, titles, properties = self._paths()
        entity_path, property_path = build_indexes(
            self.ctx.cache_dir, documents=documents, titles_table=titles, property_table=properties
        )
        return pl.read_parquet(entity_path), pl.read_parquet(property_path)

    def deviations(self, details: dict) -> list:
        from kbench.protocol import Deviation

        p = self.params
        tables = [x for x in (p.documents, p.titles_table, p.property_table) if x]
        kept = "ids that came with the input are kept; " if p.keep_existing_ids else ""
        return [
            Deviation(
                id="linking-own-index",
                paper="MAPLE maps entities and relations to Wikidata identifiers with Wikimapper",
                kbench=f"{kept}missing ids are looked up by normalised name in indexes built from {', '.join(tables)}",
                effect="which triplets are linked (drops *_unlinked, *_ambiguous) and to which ids",
            )
        ]

    def run(self, table) -> StageOutput:
        import polars as pl

        from kbench.sources.link_index import normalise

        entities, props = (index.lazy() for index in self._indexes)
        keep = self.params.keep_existing_ids

        def lookup(frame, name_col: str, id_col: str, index, prefix: str):
            joined = frame.with_columns(normalise(pl.col(name_col)).alias("__key")).join(
                index.rename({"id": "__found", "ambiguous": f"__{prefix}_ambiguous"}),
                left_on="__key",
                right_on="key",
                how="left",
                maintain_order="left",
            )
            had = pl.col(id_col).is_not_null() if keep else pl.lit(False)
            return joined.with_columns(
                pl.when(had).then(pl.col(id_col)).otherwise(pl.col("__found")).alias(id_col),
                pl.when(had)
                .then(False)
                .otherwise(pl.col(f"__{prefix}_ambiguous").fill_null(False))
                .alias(f"__{prefix}_ambiguous"),
                had.alias(f"__{prefix}_had"),
            ).drop("__key", "__found")

        linked = lookup(table, "subject", "subject_id", entities, "s")
        linked = lookup(linked, "object", "object_id", entities, "o")
        linked = lookup(linked, "relation_label", "relation", props, "r")
        linked = linked.with_columns(
            link_method=pl.when(pl.col("__s_had") & pl.col("__o_had") & pl.col("__r_had"))
            .then(pl.lit("annotated"))
            .otherwise(pl.lit("index")),
        )
        qid, pid = r"^Q[1-9][0-9]*$", r"^P[1-9][0-9]*$"
        reason = (
            pl.when(pl.col("object_kind") == "literal")
            .then(pl.lit("object_is_literal"))
            .when(
                ~pl.col("subject_id").str.contains(qid)
                | ~pl.col("object_id").str.contains(qid)
                | ~pl.col("relation").str.contains(pid)
            )
            .then(pl.lit("invalid_id"))
            .when(pl.col("__s_ambiguous"))
            .then(pl.lit("subject_ambiguous"))
            .when(pl.col("__o_ambiguous"))
            .then(pl.lit("object_ambiguous"))
            .when(pl.col("__r_ambiguous"))
            .then(pl.lit("relation_ambiguous"))
            .when(pl.col("subject_id").is_null())
            .then(pl.lit("subject_unlinked"))
            .when(pl.col("object_id").is_null())
            .then(pl.lit("object_unlinked"))
            .when(pl.col("relation").is_null())
            .then(pl.lit("relation_unlinked"))
            .when(pl.col("subject_id") == pl.col("object_id"))
            .then(pl.lit("self_loop"))
            .otherwise(pl.lit(None, dtype=pl.String))
        )
        out = filter_with_reason(linked, reason)
        helpers = ["__s_had", "__o_had", "__r_had", "__s_ambiguous", "__o_ambiguous", "__r_ambiguous"]
        return StageOutput(kept=out.kept.drop(helpers), rejected=out.rejected.drop(helpers))
