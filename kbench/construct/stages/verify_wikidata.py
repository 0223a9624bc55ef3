"""`verify_wikidata`: keep facts whose subject, relation and object exist in Wikidata; read labels.

Input columns: `relation` (P-id; `wikidata_property` instead where the table has it, see
`_wikidata_common.property_column`), `subject_id`, `object_id` (Q/P-ids; `object_id` may be null for
relations listed in `literal_object_relations`, e.g. P569 date of birth, whose values are dates).
An id "exists" when it is the subject of any triple (a label is enough). The distinct ids are
looked up in batched `VALUES` queries (`batch_size` ids each, default 200) through the shared
client, embedded or HTTP (see `_wikidata_common`).

Drop reasons, first that applies: `invalid_id` (an id not matching `^[QP][1-9][0-9]*$`, or a
relation that is not a P-id), `missing_id` (no relation or subject id, or no object id where the
object should be an entity), `relation_not_in_wikidata`, `subject_not_in_wikidata`,
`object_not_in_wikidata`.

Labels: where `subject`, `object` or `relation_label` is null or blank, it is filled with the
entity's English label from Wikidata. Existing labels are kept as the source wrote them.
"""

from __future__ import annotations

from kbench.construct.stage import StageOutput, filter_with_reason, register_stage
from kbench.construct.stages._wikidata_common import (
    WikidataCheck,
    WikidataParams,
    knowledge_source,
    matches,
    open_wikidata,
    present,
    property_column,
)
from kbench.progress import progress
from kbench.sources.wikidata import ID_PATTERN, PROPERTY_PATTERN


@register_stage
class VerifyWikidata(WikidataCheck):
    name = "verify_wikidata"
    version = 3  # 2: Google-RE birth dates as Wikidata dateTime literals; 3: knowledge_source recorded

    class Params(WikidataParams):
        literal_object_relations: list[str] = ["P569", "P570"]

    check = (
        "existence",
        "MAPLE verifies that subject, relation and object exist in Wikidata (the Wikidata API)",
        "which facts are kept (drops *_not_in_wikidata)",
    )

    def run(self, table) -> StageOutput:
        import polars as pl

        relation = property_column(table)
        id_columns = (relation, "subject_id", "object_id")
        label_columns = {"subject": "subject_id", "object": "object_id", "relation_label": relation}
        literal = pl.col(relation).is_in(self.params.literal_object_relations)
        id_problem = (
            pl.when(present(relation) & ~matches(relation, PROPERTY_PATTERN))
            .then(pl.lit("invalid_id"))
            .when(~present(relation) | ~present("subject_id") | (~present("object_id") & ~literal))
            .then(pl.lit("missing_id"))
            .when(~matches("subject_id", ID_PATTERN) | (present("object_id") & ~matches("object_id", ID_PATTERN)))
            .then(pl.lit("invalid_id"))
        )
        df = table.with_columns(pl.col(*id_columns).cast(pl.Utf8), id_problem.alias("__problem")).collect()
        lookable = df.filter(pl.col("__problem").is_null())
        wanted = set().union(*(lookable[c].drop_nulls().to_list() for c in id_columns))
        with progress("verify_wikidata: looking up ids", len(wanted)) as advance:
            found = open_wikidata(self.params, self.ctx, on_batch=advance).entities(wanted)

        known = list(found)
        reason = (
            pl.when(pl.col("__problem").is_not_null())
            .then(pl.col("__problem"))
            .when(~pl.col(relation).is_in(known))
            .then(pl.lit("relation_not_in_wikidata"))
            .when(~pl.col("subject_id").is_in(known))
            .then(pl.lit("subject_not_in_wikidata"))
            .when(present("object_id") & ~pl.col("object_id").is_in(known))
            .then(pl.lit("object_not_in_wikidata"))
        )
        labels = {k: v for k, v in found.items() if v is not None}
        df = df.with_columns(
            [
                pl.when(present(column))
                .then(pl.col(column))
                .otherwise(pl.col(id_column).replace_strict(labels, default=pl.col(column), return_dtype=pl.Utf8))
                .alias(column)
                for column, id_column in label_columns.items()
                if column in df.columns
            ]
        )
        out = filter_with_reason(df.lazy(), reason)
        return StageOutput(
            kept=out.kept.drop("__problem"),
            rejected=out.rejected.drop("__problem"),
            details={"knowledge_source": knowledge_source(self.params, self.ctx)},
        )
