"""Stage `corpus_presence`: keep facts whose subject and object occur in a pretraining corpus.

MAPLE verifies corpus presence with infini-gram over the models' pretraining data. Here `corpus`
is a folder of `.jsonl` documents with a `text` field (or one such file); the stage builds an
infini-gram index over it once (cached by the corpus's content hash, see
`kbench.sources.corpus_index` for the byte-level choice and disk needs) and then asks it about
each distinct subject and object name (the `subject` / `object` columns, exact and
case-sensitive byte substrings).

`mode`:
  * `both_present` (default): subject and object each occur somewhere in the corpus;
  * `same_document`: some document contains both. Documents are found from each name's
    occurrences, reading at most `max_occurrences` per name; when a name has more, the set of
    documents is a lower bound and `cooccurrence_approx` is true.

Added columns: `subject_corpus_count`, `object_corpus_count` (occurrences), and in
`same_document` mode `cooccurrence_docs` (documents holding both) and `cooccurrence_approx`.
Drops: `subject_not_in_corpus`, `object_not_in_corpus`, `no_cooccurrence`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from kbench.construct.stage import Stage, StageOutput, StageParams, filter_with_reason, register_stage


@register_stage
class CorpusPresence(Stage):
    name = "corpus_presence"

    class Params(StageParams):
        corpus: str
        mode: Literal["both_present", "same_document"] = "both_present"
        max_occurrences: int = 10_000
        cpus: int = 1
        mem_gb: int = 2

    def input_files(self) -> list[Path]:
        from kbench.sources.corpus_index import corpus_files

        return corpus_files(self.ctx.resolve(self.params.corpus))

    def deviations(self, details: dict) -> list:
        from kbench.protocol import Deviation

        return [
            Deviation(
                id="corpus-presence-own-corpus",
                paper="MAPLE filters triplets against OLMo-mix-1124, OLMo2's pretraining corpus, in three steps",
                kbench=f"one infini-gram check ({self.params.mode}, exact names) over {self.params.corpus}",
                effect="which facts count as seen in pretraining (drops *_not_in_corpus, no_cooccurrence)",
            )
        ]

    def run(self, table) -> StageOutput:
        import polars as pl

        from kbench.progress import progress
        from kbench.sources.corpus_index import CorpusIndex, build_index

        p = self.params
        index = CorpusIndex(build_index(self.ctx.resolve(p.corpus), self.ctx.cache_dir, cpus=p.cpus, mem_gb=p.mem_gb))
        names = table.select("subject", "object").collect()
        distinct = sorted({n for n in names["subject"].to_list() + names["object"].to_list() if n})
        counts, docs, truncated = {}, {}, {}
        with progress("corpus counts", total=len(distinct), unit="names") as advance:
            for name in distinct:
                counts[name] = index.count(name)
                if p.mode == "same_document" and counts[name]:
                    docs[name], truncated[name] = index.documents_containing(name, p.max_occurrences)
                advance(1)

        count_of = pl.DataFrame(
            {"__name": list(counts), "__count": list(counts.values())}, schema={"__name": pl.String, "__count": pl.Int64}
        ).lazy()
        out = table
        for side in ("subject", "object"):
            out = (
                out.join(count_of, left_on=side, right_on="__name", how="left", maintain_order="left")
                .rename({"__count": f"{side}_corpus_count"})
                .with_columns(pl.col(f"{side}_corpus_count").fill_null(0))
            )
        reason = (
            pl.when(pl.col("subject_corpus_count") == 0)
            .then(pl.lit("subject_not_in_corpus"))
            .when(pl.col("object_corpus_count") == 0)
            .then(pl.lit("object_not_in_corpus"))
        )
        if p.mode == "same_document":
            pairs = names.unique().rows()
            shared = {(s, o): len(docs.get(s, set()) & docs.get(o, set())) for s, o in pairs}
            approx = {(s, o): truncated.get(s, False) or truncated.get(o, False) for s, o in pairs}
            cooc = pl.DataFrame(
                {
                    "subject": [k[0] for k in shared],
                    "object": [k[1] for k in shared],
                    "cooccurrence_docs": list(shared.values()),
                    "cooccurrence_approx": [approx[k] for k in shared],
                },
                schema={
                    "subject": pl.String,
                    "object": pl.String,
                    "cooccurrence_docs": pl.Int64,
                    "cooccurrence_approx": pl.Boolean,
                },
            ).lazy()
            out = out.join(cooc, on=["subject", "object"], how="left", maintain_order="left", nulls_equal=True)
            reason = reason.when(pl.col("cooccurrence_docs").fill_null(0) == 0).then(pl.lit("no_cooccurrence"))
        return filter_with_reason(out, reason.otherwise(pl.lit(None, dtype=pl.String)))
