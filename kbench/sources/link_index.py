"""Name -> Wikidata id indexes for linking (a local stand-in for wikimapper and property labels).

Entity index: surface form -> Q-id, built from
  * a titles table (TSV `title<TAB>qid`, e.g. exported from a Wikipedia dump's page_props, as
    wikimapper does; underscores in titles count as spaces), and/or
  * documents in the REBEL format: each document's `title` -> its `uri`, and every annotated
    entity mention's `surfaceform` -> its `uri`.
Property index: relation label -> P-id, built from
  * a labels table (TSV `pid<TAB>label`), and/or
  * the documents' annotated predicates (`surfaceform` -> `uri`), i.e. the Wikidata property
    labels the REBEL dataset was aligned with.

Keys are normalised (NFKC, case-folded, underscores to spaces, whitespace collapsed). Table entries
win over document-derived ones. Among equal-priority candidates the id seen most often wins; a tie
at the top marks the key `ambiguous` (the linker rejects it rather than guess).

Both indexes are parquet files (columns key, id, ambiguous) in `cache_dir/link_index/`, named by
the sha256 of the inputs and this module's version, so they are built once and never stale.
"""

from __future__ import annotations

import re
from pathlib import Path

from kbench.errors import InputError
from kbench.io import sha256_file, stable_hash, write_parquet

INDEX_VERSION = 1
ENTITY_ID = re.compile(r"^Q[1-9]\d*$")
PROPERTY_ID = re.compile(r"^P[1-9]\d*$")


def normalise(name):
    """The lookup key of a name column (a polars expression): one definition for index and query."""
    return (
        name.str.normalize("NFKC")
        .str.to_lowercase()
        .str.replace_all("_", " ", literal=True)
        .str.replace_all(r"\s+", " ")
        .str.strip_chars()
    )


def _read_pairs(path: Path, id_column: int, id_pattern: re.Pattern) -> list[tuple[str, str]]:
    """(name, id) pairs from a two-column TSV; the id is in column `id_column` (0 or 1)."""
    if not path.is_file():
        raise InputError(path, "table not found")
    pairs = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 2:
                raise InputError(path, "expected two tab-separated columns", line=lineno)
            ident, name = parts[id_column].strip(), parts[1 - id_column]
            if not id_pattern.match(ident):
                if lineno == 1:
                    continue  # a header line
                raise InputError(path, f"{ident!r} is not a valid Wikidata id", line=lineno)
            pairs.append((name, ident))
    return pairs


def _document_pairs(path: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    from kbench.sources.documents import iter_documents

    entities, properties = [], []
    for _, _, doc in iter_documents(path, required=("title",)):
        if ENTITY_ID.match(str(doc.get("uri", ""))):
            entities.append((doc["title"], doc["uri"]))
        for ent in doc.get("entities") or []:
            if ENTITY_ID.match(str(ent.get("uri", ""))) and ent.get("surfaceform"):
                entities.append((ent["surfaceform"], ent["uri"]))
        for t in doc.get("triples") or []:
            pred = t.get("predicate") or {}
            if PROPERTY_ID.match(str(pred.get("uri", ""))) and pred.get("surfaceform"):
                properties.append((pred["surfaceform"], pred["uri"]))
    return entities, properties


def _resolve(ranked: list[list[tuple[str, str]]]):
    """Frame (key, id, ambiguous) from lists of (name, id) pairs, highest priority first."""
    import polars as pl

    pairs = pl.DataFrame(
        [(name, ident, rank) for rank, group in enumerate(ranked) for name, ident in group],
        schema={"name": pl.String, "id": pl.String, "rank": pl.Int64},
        orient="row",
    )
    counted = (
        pairs.with_columns(key=normalise(pl.col("name")))
        .filter(pl.col("key") != "")
        .filter(pl.col("rank") == pl.col("rank").min().over("key"))  # the best source that knows the key
        .group_by("key", "id")
        .len()
        .sort(["key", "len", "id"], descending=[False, True, False])
    )
    top = counted.group_by("key", maintain_order=True).agg(
        pl.col("id").first(),
        ambiguous=(pl.col("len").len() > 1) & (pl.col("len").get(0) == pl.col("len").get(1, null_on_oob=True)),
    )
    return top.with_columns(
        id=pl.when(pl.col("ambiguous")).then(None).otherwise(pl.col("id")),
        ambiguous=pl.col("ambiguous").fill_null(False),
    ).sort("key")


def build_indexes(
    cache_dir: Path, *, documents: Path | None, titles_table: Path | None, property_table: Path | None
) -> tuple[Path, Path]:
    """Build (or reuse) the entity and property index files; returns their paths."""
    inputs = [p for p in (titles_table, property_table) if p is not None]
    doc_files = []
    if documents is not None:
        from kbench.sources.documents import document_files

        doc_files = document_files(documents)
    key = stable_hash(
        {
            "v": INDEX_VERSION,
            "files": [sha256_file(p) for p in inputs + doc_files],
            "roles": [titles_table is not None, property_table is not None, documents is not None],
        }
    )[:20]
    folder = cache_dir / "link_index"
    entity_path, property_path = folder / f"entities-{key}.parquet", folder / f"properties-{key}.parquet"
    if entity_path.exists() and property_path.exists():
        return entity_path, property_path
    doc_entities, doc_properties = _document_pairs(documents) if documents is not None else ([], [])
    table_entities = _read_pairs(titles_table, 1, ENTITY_ID) if titles_table else []
    table_properties = _read_pairs(property_table, 0, PROPERTY_ID) if property_table else []
    write_parquet(entity_path, _resolve([table_entities, doc_entities]))
    write_parquet(property_path, _resolve([table_properties, doc_properties]))
    return entity_path, property_path
