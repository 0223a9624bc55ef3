"""`single_answer`: keep (subject, relation) pairs that have exactly one object in Wikidata.

For each relation, the distinct subjects are looked up in batches of `batch_size` (default 200)
with one query per batch:

    SELECT ?item (COUNT(DISTINCT ?value) AS ?count)
    WHERE { VALUES ?item { wd:Q1 ... } ?item wdt:P19 ?value } GROUP BY ?item

A row is kept when its subject has exactly one value for its relation. Drop reasons:
`invalid_id` (relation or subject id malformed or missing), `no_answer_in_store` (no value at
all), `multiple_answers` (two or more distinct values). Uses the same data source settings as
`verify_wikidata` (an embedded store, the LAMA subset, or `--sparql-endpoint`).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from kbench.build.stage import Stage, StageOutput, filter_with_reason, register_stage
from kbench.build.stages._wikidata_common import WikidataParams, endpoint_option, id_or_none, open_wikidata, progress, wikidata_input_files
from kbench.sources.wikidata import is_valid_id


@register_stage
class SingleAnswer(Stage):
    name = "single_answer"
    Params = WikidataParams

    def input_files(self) -> list[Path]:
        return wikidata_input_files(self.params, self.ctx)

    def run_options(self) -> dict:
        return endpoint_option(self.ctx)

    def run(self, table) -> StageOutput:
        import polars as pl

        df = table.collect()
        pairs = [(id_or_none(r), id_or_none(s)) for r, s in zip(df["relation"].to_list(), df["subject_id"].to_list())]
        valid = [r is not None and r.startswith("P") and is_valid_id(r) and is_valid_id(s) for r, s in pairs]
        subjects_by_relation: dict[str, set[str]] = defaultdict(set)
        for ok, (r, s) in zip(valid, pairs):
            if ok:
                subjects_by_relation[r].add(s)

        counts: dict[tuple[str, str], int] = {}
        total = sum(len(s) for s in subjects_by_relation.values())
        with progress("single_answer: counting objects", total) as advance:
            client = open_wikidata(self.params, self.ctx, on_batch=advance)
            for relation in sorted(subjects_by_relation):
                for subject, n in client.object_counts(relation, subjects_by_relation[relation]).items():
                    counts[(relation, subject)] = n

        reasons = []
        for ok, pair in zip(valid, pairs):
            if not ok:
                reasons.append("invalid_id")
            else:
                n = counts[pair]
                reasons.append(None if n == 1 else "no_answer_in_store" if n == 0 else "multiple_answers")
        return filter_with_reason(df.lazy(), pl.lit(pl.Series("reason", reasons, dtype=pl.Utf8)))
