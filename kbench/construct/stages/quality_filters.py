"""Stage `quality_filters`: MAPLE's quality control on (subject, relation, object) rows.

Input columns: subject, object, relation (P-id, may be null), relation_label. Drops, checked in
this order (the first that applies is the reason):

  * `uninformative_relation`: the relation's P-id or label is in `uninformative_relations`
    (default: opposite of P461, different from P1889, said to be the same as P460 — relations
    whose answer says nothing about the subject's own facts);
  * `object_too_long`: the object has more than `max_object_words` words or
    `max_object_chars` characters (a short-answer benchmark needs short answers);
  * `lexical_overlap`: subject and object share words, measured on lower-cased word tokens
    (`\\w+`) minus `overlap_stopwords`, as |shared| / |tokens of the shorter side|; dropped when
    that ratio exceeds `max_token_overlap` (default 0.0: any shared content word drops the row,
    e.g. "Chelopech Hill" / "Chelopech"). One side being a substring of the other also counts.

Pure column expressions on each row, so the stage is row-wise (the runner streams it in chunks).
"""

from __future__ import annotations

from kbench.construct.stage import Stage, StageOutput, StageParams, filter_with_reason, register_stage

DEFAULT_UNINFORMATIVE = ["P461", "opposite of", "P1889", "different from", "P460", "said to be the same as"]
DEFAULT_STOPWORDS = ["the", "a", "an", "of", "and", "in", "on", "at", "for", "to", "de", "la", "le", "von", "van"]


@register_stage
class QualityFilters(Stage):
    name = "quality_filters"
    row_wise = True

    class Params(StageParams):
        uninformative_relations: list[str] = DEFAULT_UNINFORMATIVE
        max_object_words: int = 8
        max_object_chars: int = 80
        max_token_overlap: float = 0.0
        overlap_stopwords: list[str] = DEFAULT_STOPWORDS

    def run(self, table) -> StageOutput:
        import polars as pl

        p = self.params
        banned = [r.strip().lower() for r in p.uninformative_relations]
        subject, obj = pl.col("subject").str.to_lowercase(), pl.col("object").str.to_lowercase()

        def tokens(text: pl.Expr) -> pl.Expr:
            return text.str.extract_all(r"\w+").list.unique().list.set_difference(pl.lit(p.overlap_stopwords))

        shared = tokens(subject).list.set_intersection(tokens(obj)).list.len()
        shorter = pl.min_horizontal(tokens(subject).list.len(), tokens(obj).list.len())
        overlap = pl.when(shorter > 0).then(shared / shorter).otherwise(0.0)
        substring = subject.str.contains(obj, literal=True) | obj.str.contains(subject, literal=True)
        reason = (
            pl.when(
                pl.col("relation").str.to_lowercase().is_in(banned)
                | pl.col("relation_label").str.to_lowercase().str.strip_chars().is_in(banned)
            )
            .then(pl.lit("uninformative_relation"))
            .when(
                (pl.col("object").str.split(" ").list.len() > p.max_object_words)
                | (pl.col("object").str.len_chars() > p.max_object_chars)
            )
            .then(pl.lit("object_too_long"))
            .when((overlap > p.max_token_overlap) | substring.fill_null(False))
            .then(pl.lit("lexical_overlap"))
            .otherwise(pl.lit(None, dtype=pl.String))
        )
        return filter_with_reason(table, reason)
