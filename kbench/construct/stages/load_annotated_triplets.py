"""Stage `load_annotated_triplets`: documents that already carry triples -> one row per triple.

For input in the REBEL dataset format (each document's `extra_json` holds `triples`, each with
`subject`/`object` entity dicts `{uri, boundaries, surfaceform}` and a `predicate` `{uri,
surfaceform}`), this replaces `extract_rebel`: no model is run. Input: the `clean_documents`
table. Output: the triplet table of `kbench.construct.triplets` (origin "annotated"), the same
shape `extract_rebel` produces.

Offsets are character offsets into the document text; the sentence is the spaCy-sentencizer
sentence holding the subject (or the object when the subject has no offsets). Dates and other
values whose `uri` is not a Q-id keep `object_id = null` and `object_kind = "literal"`;
`link_wikidata` rejects them with a reason. The table changes shape (documents -> triples), so
`preserves_rows = False`; documents without triples simply yield no rows. The same triple
annotated twice in one sentence is rejected as `duplicate_triple`. Row-wise: each document gives
its rows on its own (duplicates are found within the document).
"""

from __future__ import annotations

import json
import re

from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage
from kbench.construct.triplets import triplet_id, triplet_schema

ENTITY_ID = re.compile(r"^Q[1-9]\d*$")
PROPERTY_ID = re.compile(r"^P[1-9]\d*$")


def _bounds(entity: dict) -> tuple[int | None, int | None]:
    b = entity.get("boundaries")
    if isinstance(b, list) and len(b) == 2 and all(isinstance(x, int) for x in b):
        return b[0], b[1]
    return None, None


@register_stage
class LoadAnnotatedTriplets(Stage):
    name = "load_annotated_triplets"
    preserves_rows = False
    row_wise = True
    version = 2  # 2: row-wise; duplicates are found within a document, not across the table

    class Params(StageParams):
        field: str = "triples"  # the key in each document's extra fields that holds the triples

    def deviations(self, details: dict) -> list:
        from kbench.protocol import Deviation

        return [
            Deviation(
                id="triplets-from-annotations",
                paper="MAPLE extracts (subject, relation, object) triplets from the text with REBEL",
                kbench=f"takes the documents' own annotated triplets (field {self.params.field!r}); no extraction model ran",
                effect="which triplets exist; extraction errors REBEL would make are absent",
            )
        ]

    def run(self, table) -> StageOutput:
        import polars as pl

        from kbench.sources.rebel import sentence_spans, sentence_splitter

        nlp = sentence_splitter()
        rows, duplicates = [], []
        for doc in table.select("doc_id", "title", "uri", "text", "extra_json").collect().iter_rows(named=True):
            triples = json.loads(doc["extra_json"] or "{}").get(self.params.field) or []
            if not triples:
                continue
            spans = sentence_spans(nlp, doc["text"])
            seen: set[str] = set()
            for t in triples:
                subj, pred, obj = t.get("subject") or {}, t.get("predicate") or {}, t.get("object") or {}
                s_start, s_end = _bounds(subj)
                o_start, o_end = _bounds(obj)
                anchor = s_start if s_start is not None else o_start
                index = next((i for i, (a, b) in enumerate(spans) if anchor is not None and a <= anchor < b), None)
                sent_start, sent_end = spans[index] if index is not None else (None, None)
                object_id = obj.get("uri") if ENTITY_ID.match(str(obj.get("uri", ""))) else None
                relation = pred.get("uri") if PROPERTY_ID.match(str(pred.get("uri", ""))) else None
                subject_id = subj.get("uri") if ENTITY_ID.match(str(subj.get("uri", ""))) else None
                tid = triplet_id(
                    doc["doc_id"],
                    subj.get("surfaceform", ""),
                    pred.get("surfaceform", ""),
                    obj.get("surfaceform", ""),
                    index if index is not None else -1,
                )
                (duplicates if tid in seen else rows).append(
                    {
                        "triplet_id": tid,
                        "doc_id": doc["doc_id"],
                        "title": doc["title"],
                        "doc_uri": doc["uri"],
                        "origin": "annotated",
                        "sentence_index": index,
                        "sentence": doc["text"][sent_start:sent_end] if index is not None else None,
                        "sentence_start": sent_start,
                        "subject": subj.get("surfaceform"),
                        "subject_id": subject_id,
                        "subject_start": s_start,
                        "subject_end": s_end,
                        "relation": relation,
                        "relation_label": pred.get("surfaceform"),
                        "object": obj.get("surfaceform"),
                        "object_id": object_id,
                        "object_kind": "entity" if object_id else "literal",
                        "object_start": o_start,
                        "object_end": o_end,
                    }
                )
                seen.add(tid)
        rejected = pl.DataFrame(duplicates, schema=triplet_schema()).with_columns(reason=pl.lit("duplicate_triple"))
        return StageOutput(kept=pl.DataFrame(rows, schema=triplet_schema()), rejected=rejected)
