"""`verify_wikidata`: keep facts whose subject, relation and object exist in Wikidata; read labels.

Input columns: `relation` (P-id), `subject_id`, `object_id` (Q/P-ids; `object_id` may be null for
relations listed in `literal_object_relations`, e.g. P569 date of birth, whose values are dates).
An id "exists" when it is the subject of any triple (a label is enough). Look-ups are batched
`VALUES` queries (`batch_size` ids each, default 200) through the shared client, embedded or HTTP
(see `_wikidata_common`).

Drop reasons, first that applies: `invalid_id` (relation, subject or object id not matching
`^[QP][1-9][0-9]*$`, or a relation that is not a P-id), `missing_id` (no subject id, or no object
id where the object should be an entity), `relation_not_in_wikidata`, `subject_not_in_wikidata`,
`object_not_in_wikidata`.

Labels: where `subject`, `object` or `relation_label` is null or empty, it is filled with the
entity's English label from Wikidata. Existing labels are kept as the source wrote them.
"""

from __future__ import annotations

from pathlib import Path

from kbench.build.stage import Stage, StageOutput, filter_with_reason, register_stage
from kbench.build.stages._wikidata_common import WikidataParams, endpoint_option, id_or_none, open_wikidata, progress, wikidata_input_files
from kbench.sources.wikidata import is_valid_id


def id_problem(relation, subject_id, object_id, literal_object: bool) -> str | None:
    """The reason a row's ids cannot be looked up at all, or None when they can."""
    relation, subject_id, object_id = id_or_none(relation), id_or_none(subject_id), id_or_none(object_id)
    if relation is None or subject_id is None or (object_id is None and not literal_object):
        if relation is not None and not (is_valid_id(relation) and relation.startswith("P")):
            return "invalid_id"
        return "missing_id"
    if not (is_valid_id(relation) and relation.startswith("P")) or not is_valid_id(subject_id):
        return "invalid_id"
    if object_id is not None and not is_valid_id(object_id):
        return "invalid_id"
    return None


@register_stage
class VerifyWikidata(Stage):
    name = "verify_wikidata"

    class Params(WikidataParams):
        literal_object_relations: list[str] = ["P569", "P570"]

    def input_files(self) -> list[Path]:
        return wikidata_input_files(self.params, self.ctx)

    def run_options(self) -> dict:
        return endpoint_option(self.ctx)

    def run(self, table) -> StageOutput:
        import polars as pl

        df = table.collect()
        literal = set(self.params.literal_object_relations)
        relations, subjects, objects = df["relation"].to_list(), df["subject_id"].to_list(), df["object_id"].to_list()
        problems = [id_problem(r, s, o, r in literal) for r, s, o in zip(relations, subjects, objects)]
        wanted = set()
        for problem, r, s, o in zip(problems, relations, subjects, objects):
            if problem is None:
                wanted.update(x for x in (r, s, id_or_none(o)) if x is not None)

        with progress("verify_wikidata: looking up ids", len(wanted)) as advance:
            found = open_wikidata(self.params, self.ctx, on_batch=advance).entities(wanted)

        reasons = []
        for problem, r, s, o in zip(problems, relations, subjects, objects):
            if problem is None:
                if r not in found:
                    problem = "relation_not_in_wikidata"
                elif s not in found:
                    problem = "subject_not_in_wikidata"
                elif id_or_none(o) is not None and o not in found:
                    problem = "object_not_in_wikidata"
            reasons.append(problem)

        labels = {k: v for k, v in found.items() if v is not None}
        fills = [(column, id_column) for column, id_column in
                 (("subject", "subject_id"), ("object", "object_id"), ("relation_label", "relation"))
                 if column in df.columns]
        df = df.with_columns([
            pl.when(pl.col(column).is_null() | (pl.col(column).cast(pl.Utf8).str.strip_chars() == ""))
            .then(pl.col(id_column).replace_strict(labels, default=pl.col(column), return_dtype=pl.Utf8))
            .otherwise(pl.col(column)).alias(column)
            for column, id_column in fills
        ])
        return filter_with_reason(df.lazy(), pl.lit(pl.Series("reason", reasons, dtype=pl.Utf8)))
