"""`single_answer`: keep (subject, relation) pairs that have exactly one object in Wikidata.

The distinct (relation, subject) pairs are looked up in batches of `batch_size` (default 200),
one query per batch, all relations sharing batches:

    SELECT ?item ?property (COUNT(DISTINCT ?value) AS ?count)
    WHERE { VALUES (?item ?property) { (wd:Q1 wdt:P19) ... } ?item ?property ?value }
    GROUP BY ?item ?property

A row is kept when its subject has exactly one value for its relation (the `wikidata_property`
column where the table has it, else `relation`; see `_wikidata_common.property_column`). Drop reasons:
`invalid_id` (relation or subject id malformed or missing), `no_answer_in_store` (no value at
all), `multiple_answers` (two or more distinct values). Uses the same data source settings as
`verify_wikidata` (an embedded store, the LAMA subset, or `--sparql-endpoint`).
"""

from __future__ import annotations

from kbench.construct.stage import StageOutput, filter_with_reason, register_stage
from kbench.construct.stages._wikidata_common import (
    WikidataCheck,
    WikidataParams,
    knowledge_source,
    matches,
    open_wikidata,
    property_column,
)
from kbench.progress import progress
from kbench.sources.wikidata import ID_PATTERN, PROPERTY_PATTERN


@register_stage
class SingleAnswer(WikidataCheck):
    name = "single_answer"
    version = 3  # 2: Google-RE birth dates as Wikidata dateTime literals; 3: knowledge_source recorded
    Params = WikidataParams
    check = (
        "single-answer",
        "MAPLE keeps single-answer triplets, counting objects with the Wikidata SPARQL API",
        "which (subject, relation) pairs count as single-answer (drops multiple_answers, no_answer_in_store)",
    )

    def run(self, table) -> StageOutput:
        import polars as pl

        relation = property_column(table)
        valid = matches(relation, PROPERTY_PATTERN) & matches("subject_id", ID_PATTERN)
        df = table.with_columns(pl.col(relation, "subject_id").cast(pl.Utf8), valid.alias("__valid")).collect()
        pairs = df.filter(pl.col("__valid")).select(relation, "subject_id").unique()
        with progress("single_answer: counting objects", pairs.height) as advance:
            counts = open_wikidata(self.params, self.ctx, on_batch=advance).object_counts(pairs.iter_rows())
        count_table = pl.DataFrame(
            {relation: [r for r, _ in counts], "subject_id": [s for _, s in counts], "__count": list(counts.values())},
            schema={relation: pl.Utf8, "subject_id": pl.Utf8, "__count": pl.Int64},
        )
        df = df.join(count_table, on=[relation, "subject_id"], how="left", maintain_order="left")
        reason = (
            pl.when(~pl.col("__valid"))
            .then(pl.lit("invalid_id"))
            .when(pl.col("__count") == 0)
            .then(pl.lit("no_answer_in_store"))
            .when(pl.col("__count") > 1)
            .then(pl.lit("multiple_answers"))
        )
        out = filter_with_reason(df.lazy(), reason)
        return StageOutput(
            kept=out.kept.drop("__valid", "__count"),
            rejected=out.rejected.drop("__valid", "__count"),
            details={"knowledge_source": knowledge_source(self.params, self.ctx)},
        )
