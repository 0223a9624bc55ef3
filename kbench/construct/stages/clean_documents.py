"""Source stage `clean_documents`: read JSONL documents and drop the ones unfit for extraction.

Input: `path` = one `.jsonl` file or a folder of them (read in sorted order). Each line is an
object with `title` and `text` (required) and optional `uri` (the article's Wikidata Q-id) and
`docid`; any other fields (the REBEL sample's `entities` and `triples`) travel on as JSON text in
the column `extra_json`, for `load_annotated_triplets` and the store builders.

Output columns: doc_id, title, uri, text, n_words, source_file, extra_json.

Drops (MAPLE, "before extraction"), each counted under its reason:
  * `list_article`: the title starts with a list prefix ("List of", "Lists of", "Index of",
    "Outline of", configurable) or more than `max_list_line_fraction` of the non-empty lines are
    bullet/numbered items;
  * `html_artifacts`: the text holds more than `max_html_artifacts` HTML tags or entities
    (`<div ...>`, `</ref>`, `&nbsp;`, `{{...}}` templates);
  * `too_short`: fewer than `min_words` whitespace-separated words (default 100).

Row-wise source: `source_chunks` reads and checks the documents (`limit` of them at most) a chunk
at a time, `run` judges each document on its own, so the runner keeps memory bounded and
`kbench build --executor ray` can judge the shards on other workers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage
from kbench.errors import InputError
from kbench.sources.documents import document_files, iter_documents

_HTML = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*(\s[^<>]*)?/?>|&[a-zA-Z]+;|&#\d+;|\{\{|\}\}")
_LIST_ITEM = re.compile(r"^\s*([*\-•#]|\d+[.)])\s+")
_CORE_FIELDS = ("docid", "title", "uri", "text")


@register_stage
class CleanDocuments(Stage):
    name = "clean_documents"
    source = True
    row_wise = True

    class Params(StageParams):
        path: str
        min_words: int = 100
        list_title_prefixes: list[str] = ["List of", "Lists of", "Index of", "Outline of"]
        max_list_line_fraction: float = 0.5
        max_html_artifacts: int = 0
        limit: int | None = None  # read at most this many documents (quick runs)

    def input_files(self) -> list[Path]:
        return document_files(self.ctx.resolve(self.params.path))

    def drop_reason(self, title: str, text: str, n_words: int) -> str | None:
        p = self.params
        lines = [ln for ln in text.splitlines() if ln.strip()]
        listy = sum(1 for ln in lines if _LIST_ITEM.match(ln))
        if any(title.startswith(prefix) for prefix in p.list_title_prefixes) or (
            lines and listy / len(lines) > p.max_list_line_fraction
        ):
            return "list_article"
        if len(_HTML.findall(text)) > p.max_html_artifacts:
            return "html_artifacts"
        if n_words < p.min_words:
            return "too_short"
        return None

    def source_chunks(self, rows: int) -> Iterator:
        """The documents as frames of at most `rows` rows (doc_id, title, uri, text, n_words,
        source_file, extra_json); bad lines are errors naming the file and line."""
        import polars as pl

        schema = {
            "doc_id": pl.String,
            "title": pl.String,
            "uri": pl.String,
            "text": pl.String,
            "n_words": pl.Int64,
            "source_file": pl.String,
            "extra_json": pl.String,
        }
        batch: list[dict] = []
        read = 0
        for path, lineno, doc in iter_documents(self.ctx.resolve(self.params.path)):
            if self.params.limit is not None and read >= self.params.limit:
                break
            read += 1
            title, text, uri = doc["title"], doc["text"], doc.get("uri")
            if not isinstance(title, str) or not isinstance(text, str):
                raise InputError(path, "`title` and `text` must be strings", line=lineno)
            if uri is not None and not isinstance(uri, str):
                raise InputError(path, "`uri` must be a string (a Wikidata Q-id)", line=lineno)
            batch.append(
                {
                    "doc_id": str(doc.get("docid", f"{path.name}:{lineno}")),
                    "title": title,
                    "uri": uri,
                    "text": text,
                    "n_words": len(text.split()),
                    "source_file": path.name,
                    "extra_json": json.dumps({k: v for k, v in doc.items() if k not in _CORE_FIELDS}, ensure_ascii=False),
                }
            )
            if len(batch) == rows:
                yield pl.DataFrame(batch, schema=schema)
                batch = []
        if batch or read == 0:
            yield pl.DataFrame(batch, schema=schema)

    def deviations(self, details: dict) -> list:
        from kbench.protocol import Deviation

        found = []
        if self.params.min_words != 100:
            found.append(
                Deviation(
                    id="min-words",
                    paper="MAPLE removes documents under 100 words",
                    kbench=f"removes documents under {self.params.min_words} words",
                    effect="which documents, and so which facts, enter the benchmark",
                )
            )
        if self.params.limit is not None:
            found.append(
                Deviation(
                    id="documents-limited",
                    paper="MAPLE reads the whole March 2022 Wikipedia dump",
                    kbench=f"reads at most {self.params.limit} documents",
                    effect="the size and coverage of the benchmark",
                )
            )
        return found

    def run(self, table) -> StageOutput:
        import polars as pl

        docs = table.collect()
        reasons = [
            self.drop_reason(title, text, n_words) for title, text, n_words in docs.select("title", "text", "n_words").iter_rows()
        ]
        tagged = docs.with_columns(reason=pl.Series(reasons, dtype=pl.String))
        return StageOutput(
            kept=tagged.filter(pl.col("reason").is_null()).drop("reason"), rejected=tagged.filter(pl.col("reason").is_not_null())
        )
