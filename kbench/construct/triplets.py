"""The triplet table: what `extract_rebel` and `load_annotated_triplets` produce for the MAPLE stages.

One row per (subject, relation, object) found in a document sentence:

  triplet_id      16 hex chars, stable: hash of (doc_id, sentence_index, subject, relation_label, object)
  doc_id, title, doc_uri          the source document (doc_uri = the article's Q-id when known)
  origin          "rebel" (model output) or "annotated" (input that carried triples)
  sentence_index, sentence, sentence_start   the sentence (spaCy sentencizer) and its offset in the text
  subject, subject_id, subject_start, subject_end   surface form, Q-id (null until linked), offsets
  relation, relation_label        P-id (null until linked) and the relation's name
  object, object_id, object_kind, object_start, object_end   kind is "entity" or "literal" (dates ...)

Offsets are character offsets into the document text; null when the name is not in the sentence.
"""

from __future__ import annotations

from kbench.io import stable_hash


def triplet_schema():
    import polars as pl

    return {
        "triplet_id": pl.String,
        "doc_id": pl.String,
        "title": pl.String,
        "doc_uri": pl.String,
        "origin": pl.String,
        "sentence_index": pl.Int64,
        "sentence": pl.String,
        "sentence_start": pl.Int64,
        "subject": pl.String,
        "subject_id": pl.String,
        "subject_start": pl.Int64,
        "subject_end": pl.Int64,
        "relation": pl.String,
        "relation_label": pl.String,
        "object": pl.String,
        "object_id": pl.String,
        "object_kind": pl.String,
        "object_start": pl.Int64,
        "object_end": pl.Int64,
    }


def triplet_id(doc_id: str, subject: str, relation_label: str, obj: str, sentence_index: int) -> str:
    return stable_hash([doc_id, sentence_index, subject, relation_label, obj])[:16]
