"""Stage `extract_rebel`: documents -> (subject, relation, object) triplets with a REBEL model.

Input: the `clean_documents` table (doc_id, title, uri, text). Output: the triplet table of
`kbench.construct.triplets` with origin "rebel"; ids are null (`link_wikidata` fills them).

Steps: split each document into sentences (spaCy `blank("en")` + sentencizer, no model
download); run the seq2seq model on batches of sentences (beam search as in the REBEL README:
3 beams, length penalty 0); decode keeping the special tokens; parse the linearised
`<triplet> head <subj> tail <obj> relation` strings (`kbench.sources.rebel`); map the head to its
character span in the sentence and the tail to its occurrence nearest the head. A name the
sentence does not contain (REBEL sometimes normalises names) keeps null offsets.

`model` is a local folder (resolved relative to the recipe) or a Hub id (default
`Babelscape/rebel-large`; real use wants a GPU, `device = "auto"` takes CUDA when present).
`trust_remote_code` stays off.

Resume: documents are processed in parts of `docs_per_part`; each part's triplets are cached in
`cache_dir/rebel/<key>.parquet`, where key hashes the model identity (id and revision, or the
sha256 of a local folder's files), the generation parameters and the part's documents. An
interrupted run recomputes only the unfinished parts. The table changes shape (documents ->
triplets): `preserves_rows = False`. The same triple generated twice for one document is rejected
as `duplicate_triple`.

Row-wise: each document is extracted on its own, so the runner feeds the stage chunk by chunk and
`kbench build --executor ray` runs it shard by shard in an actor pool (`model_device`), each actor
loading the model once, with a GPU when the device is cuda. `kbench build --device` overrides the
recipe's `device`.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage
from kbench.io import sha256_file, stable_hash, write_parquet


def triplet_rows(doc: dict, index: int, span: tuple[int, int], generated: str) -> list[dict]:
    """Triplet-table rows for one sentence of `doc` from the model's decoded output."""
    from kbench.construct.triplets import triplet_id
    from kbench.sources.rebel import find_span, parse_rebel_output

    start, end = span
    sentence = doc["text"][start:end]
    rows = []
    for t in parse_rebel_output(generated):
        head = find_span(sentence, t.head)
        tail = find_span(sentence, t.tail, near=head[0] if head else None)
        rows.append(
            {
                "triplet_id": triplet_id(doc["doc_id"], t.head, t.relation, t.tail, index),
                "doc_id": doc["doc_id"],
                "title": doc["title"],
                "doc_uri": doc["uri"],
                "origin": "rebel",
                "sentence_index": index,
                "sentence": sentence,
                "sentence_start": start,
                "subject": t.head,
                "subject_id": None,
                "subject_start": start + head[0] if head else None,
                "subject_end": start + head[1] if head else None,
                "relation": None,
                "relation_label": t.relation,
                "object": t.tail,
                "object_id": None,
                "object_kind": "entity",
                "object_start": start + tail[0] if tail else None,
                "object_end": start + tail[1] if tail else None,
            }
        )
    return rows


@register_stage
class ExtractRebel(Stage):
    name = "extract_rebel"
    preserves_rows = False
    row_wise = True
    version = 2  # 2: row-wise; duplicates are found within a document, not across the table

    class Params(StageParams):
        model: str = "Babelscape/rebel-large"
        revision: str | None = None
        batch_size: int = 16
        max_input_tokens: int = 256
        max_new_tokens: int = 256
        num_beams: int = 3
        device: str = "auto"
        docs_per_part: int = 64
        trust_remote_code: bool = False

    def _local_model(self) -> Path | None:
        candidate = self.ctx.resolve(self.params.model)
        return candidate if candidate.is_dir() else None

    def input_files(self) -> list[Path]:
        local = self._local_model()
        return sorted(p for p in local.rglob("*") if p.is_file()) if local else []

    def _model_identity(self) -> dict:
        local = self._local_model()
        if local is None:
            return {"hub": self.params.model, "revision": self.params.revision}
        return {"local": {str(p.relative_to(local)): sha256_file(p) for p in self.input_files()}}

    def model_device(self) -> str:
        return self.ctx.options.get("device") or self.params.device

    @cached_property
    def _writer(self):
        """The REBEL model, loaded on the first part that is not cached, then kept."""
        from kbench.models.seq2seq import Seq2SeqWriter

        local = self._local_model()
        source = str(local) if local else self.params.model
        return Seq2SeqWriter.load(source, self.params.revision, self.params.trust_remote_code, self.model_device())

    def _generate(self, sentences: list[str]) -> list[str]:
        p = self.params
        return self._writer.generate(sentences, p.max_input_tokens, p.max_new_tokens, p.num_beams)

    def run(self, table) -> StageOutput:
        import polars as pl

        from kbench.construct.triplets import triplet_schema
        from kbench.progress import progress
        from kbench.sources.rebel import sentence_spans, sentence_splitter

        p = self.params
        docs = table.select("doc_id", "title", "uri", "text").collect().to_dicts()
        nlp = sentence_splitter()
        identity = self._model_identity()
        generation = {k: v for k, v in p.model_dump().items() if k not in ("model", "revision", "device", "docs_per_part")}
        frames = []
        with progress("REBEL extraction", total=len(docs), unit="documents") as advance:
            for first in range(0, len(docs), p.docs_per_part):
                part = docs[first : first + p.docs_per_part]
                key = stable_hash(
                    {
                        "model": identity,
                        "generation": generation,
                        "docs": [[d["doc_id"], d["title"], d["uri"], d["text"]] for d in part],
                    }
                )
                cached = self.ctx.cache_dir / "rebel" / f"{key[:32]}.parquet"
                if not cached.exists():
                    units = [(d, i, span) for d in part for i, span in enumerate(sentence_spans(nlp, d["text"]))]
                    rows = []
                    for b in range(0, len(units), p.batch_size):
                        batch = units[b : b + p.batch_size]
                        outputs = self._generate([d["text"][s:e] for d, _, (s, e) in batch])
                        for (d, i, span), generated in zip(batch, outputs):
                            rows.extend(triplet_rows(d, i, span, generated))
                    write_parquet(cached, pl.DataFrame(rows, schema=triplet_schema()))
                frames.append(pl.read_parquet(cached))
                advance(len(part))
        frame = pl.concat(frames) if frames else pl.DataFrame(schema=triplet_schema())
        # a document's rows are consecutive: rle_id numbers the documents, so chunking cannot matter
        first_seen = pl.struct(pl.col("doc_id").rle_id(), "triplet_id").is_first_distinct()
        duplicates = frame.filter(~first_seen).with_columns(reason=pl.lit("duplicate_triple"))
        return StageOutput(kept=frame.filter(first_seen), rejected=duplicates)
