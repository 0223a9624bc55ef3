"""The embedded Wikidata: a Wikidata-shaped subset written from the LAMA inputs, loaded into pyoxigraph.

Subset contents (N-Triples, sorted, deduplicated, so equal inputs give equal bytes):
  * every known fact `wd:S wdt:P wd:O` from the T-REx relation files, Google-RE (its Freebase
    predicates mapped to P19/P20/P569; a birth date `1941` or `1941-05-22` becomes Wikidata's
    truthy form `"1941-05-22T00:00:00Z"^^xsd:dateTime`) and the AutoPrompt train/dev files;
  * one English label per entity, `rdfs:label "..."@en` (first seen: T-REx, then AutoPrompt,
    then Google-RE), and `skos:altLabel` for every other name in the X-FACTR aliases table;
  * each property as Wikidata describes it: label, `schema:description`, `a wikibase:Property`,
    `wikibase:directClaim wdt:P..` (from `relations.jsonl`, plus built-in labels for Google-RE's).
Rows without a valid id (`^[QP][1-9][0-9]*$`) are skipped: they are never written into RDF.

Stores: `import_rdf` loads N-Triples/Turtle into a store folder (what `oxigraph serve-read-only`
serves, too) and records each imported file's name and sha256 in the folder's `kbench-import.json`
(what a build names as its knowledge source; `open_imported_store` opens such a folder).
`open_cached_store` builds the store for a file once, in `<cache>/wikidata/stores/<sha256 of the
file>/` (built in a temporary folder, then renamed), and opens it read-only, so several processes
and stages can share it.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kbench.errors import InputError, UserError, require
from kbench.io import atomic_path, iter_jsonl, sha256_file, write_json
from kbench.sources.wikidata import DIRECT, ENTITY, RDF, RDFS, SCHEMA, SKOS, WIKIBASE, XSD, is_valid_id

#: Google-RE's Freebase predicates and the Wikidata properties they correspond to.
GOOGLE_RE_PROPERTIES = {
    "/people/person/place_of_birth": "P19",
    "/people/deceased_person/place_of_death": "P20",
    "/people/person/date_of_birth": "P569",
}
BUILTIN_PROPERTY_LABELS = {"P19": "place of birth", "P20": "place of death", "P569": "date of birth"}
RDF_FORMATS = {".nt": "N_TRIPLES", ".ttl": "TURTLE"}
IMPORT_RECORD = "kbench-import.json"  # the files `import_rdf` loaded into a store folder


@dataclass
class SubsetInputs:
    """Where the LAMA inputs are; every field is optional, but at least one fact source is needed."""

    trex_dir: Path | None = None  # folder of T-REx `P*.jsonl` files
    relations: Path | None = None  # LAMA `relations.jsonl` (property labels)
    google_re_dir: Path | None = None  # folder of Google-RE `*.jsonl` files
    autoprompt_dir: Path | None = None  # folder of `<relation>/{train,dev}.jsonl`
    aliases: Path | None = None  # X-FACTR `TREx_en.txt`: qid<TAB>name<TAB>name...

    def fact_files(self) -> list[tuple[str, Path]]:
        files: list[tuple[str, Path]] = []
        if self.trex_dir:
            files += [("trex", p) for p in _listed(self.trex_dir, "P*.jsonl")]
        if self.autoprompt_dir:
            files += [("autoprompt", p) for p in _listed(self.autoprompt_dir, "*/train.jsonl")]
            files += [("autoprompt", p) for p in _listed(self.autoprompt_dir, "*/dev.jsonl")]
        if self.google_re_dir:
            files += [("google_re", p) for p in _listed(self.google_re_dir, "*.jsonl")]
        return files

    def files(self) -> list[Path]:
        """Every file the subset is made from (what a stage hashes into its resume key)."""
        facts = [p for _, p in self.fact_files()]
        if not facts:
            raise UserError("a Wikidata subset needs at least one fact file: set trex_dir, google_re_dir or autoprompt_dir")
        extra = [Path(p) for p in (self.relations, self.aliases) if p]
        for p in extra:
            if not p.is_file():
                raise InputError(p, "file not found")
        return facts + extra


def _listed(folder: Path, pattern: str) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, "folder not found")
    return sorted(folder.glob(pattern))


@dataclass
class _Subset:
    triples: set[str] = field(default_factory=set)
    labels: dict[str, str] = field(default_factory=dict)


def _iri(base: str, local: str) -> str:
    return f"<{base}{local}>"


def _literal(text: str, *, language: str | None = None, datatype: str | None = None) -> str:
    from pyoxigraph import Literal, NamedNode

    if language:
        return str(Literal(text, language=language))
    if datatype:
        return str(Literal(text, datatype=NamedNode(datatype)))
    return str(Literal(text))


def _label_text(value: object) -> bool:
    """Whether a source label can be written as an RDF string (non-empty text, valid UTF-8)."""
    if not isinstance(value, str) or not value.strip():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, from a JSON escape such as \ud800
        return False
    return True


def _fact_rows(kind: str, path: Path) -> Iterator[tuple[str, str, str | None, str, str, str | None]]:
    """(subject id, subject label, relation, object id, object label, literal object) per line."""
    if kind == "google_re":
        for lineno, row in iter_jsonl(path, required=("pred", "sub_label", "obj_label")):
            relation = GOOGLE_RE_PROPERTIES.get(row["pred"]) if isinstance(row["pred"], str) else None
            if relation is None:
                raise InputError(
                    path, f"unknown Google-RE predicate {row['pred']!r}; known: {', '.join(GOOGLE_RE_PROPERTIES)}", line=lineno
                )
            literal = row.get("obj") if relation == "P569" and isinstance(row.get("obj"), str) else None
            yield row.get("sub_w") or "", row["sub_label"], relation, row.get("obj_w") or "", row["obj_label"], literal
        return
    relation = path.stem if kind == "trex" else path.parent.name
    for _, row in iter_jsonl(path, required=("sub_uri", "obj_uri", "sub_label", "obj_label")):
        yield row["sub_uri"], row["sub_label"], row.get("predicate_id", relation), row["obj_uri"], row["obj_label"], None


def wikidata_datetime(date: str) -> str | None:
    """Google-RE's `1941` or `1941-05-22` as Wikidata writes truthy dates (`1941-01-01T00:00:00Z`)."""
    match = re.fullmatch(r"(\d{4})(?:-(\d{2})-(\d{2}))?", date.strip())
    if match is None:
        return None
    year, month, day = match.group(1), match.group(2) or "01", match.group(3) or "01"
    return f"{year}-{month}-{day}T00:00:00Z"


def _add_facts(subset: _Subset, inputs: SubsetInputs) -> None:
    for kind, path in inputs.fact_files():
        for sub, sub_label, relation, obj, obj_label, literal in _fact_rows(kind, path):
            if not (is_valid_id(sub) and is_valid_id(relation)):
                continue
            if _label_text(sub_label):
                subset.labels.setdefault(sub, sub_label)
            if literal is not None:
                when = wikidata_datetime(literal)
                if when is not None:
                    subset.triples.add(
                        f"{_iri(ENTITY, sub)} {_iri(DIRECT, relation)} {_literal(when, datatype=XSD + 'dateTime')} ."
                    )
                continue
            if not is_valid_id(obj):
                continue
            if _label_text(obj_label):
                subset.labels.setdefault(obj, obj_label)
            subset.triples.add(f"{_iri(ENTITY, sub)} {_iri(DIRECT, relation)} {_iri(ENTITY, obj)} .")


def _add_properties(subset: _Subset, inputs: SubsetInputs) -> None:
    properties = dict(BUILTIN_PROPERTY_LABELS)
    descriptions: dict[str, str] = {}
    if inputs.relations:
        for lineno, row in iter_jsonl(inputs.relations, required=("relation",)):
            if not is_valid_id(row["relation"]):
                raise InputError(inputs.relations, f"invalid property id {row['relation']!r}", line=lineno)
            if _label_text(row.get("label")):
                properties[row["relation"]] = row["label"]
            properties.setdefault(row["relation"], "")
            if _label_text(row.get("description")):
                descriptions[row["relation"]] = row["description"]
    for pid, label in properties.items():
        node = _iri(ENTITY, pid)
        subset.triples.add(f"{node} {_iri(RDF, 'type')} {_iri(WIKIBASE, 'Property')} .")
        subset.triples.add(f"{node} {_iri(WIKIBASE, 'directClaim')} {_iri(DIRECT, pid)} .")
        if label:
            subset.labels.setdefault(pid, label)
        if pid in descriptions:
            subset.triples.add(f"{node} {_iri(SCHEMA, 'description')} {_literal(descriptions[pid], language='en')} .")


def _add_aliases(subset: _Subset, path: Path) -> None:
    with open(path, encoding="utf-8", errors="strict") as fh:
        try:
            for lineno, line in enumerate(fh, start=1):
                fields = line.rstrip("\n").split("\t")
                if not fields[0]:
                    continue
                if not is_valid_id(fields[0]):
                    raise InputError(path, f"first column must be a Wikidata id, got {fields[0]!r}", line=lineno)
                label = subset.labels.get(fields[0])
                for name in fields[1:]:
                    if name and name != label:
                        subset.triples.add(
                            f"{_iri(ENTITY, fields[0])} {_iri(SKOS, 'altLabel')} {_literal(name, language='en')} ."
                        )
        except UnicodeDecodeError as exc:
            raise InputError(path, "not UTF-8 text") from exc


def write_lama_subset(inputs: SubsetInputs, out: str | Path) -> dict[str, int]:
    """Write the Wikidata-shaped N-Triples subset of the LAMA inputs to `out` (atomically)."""
    require("pyoxigraph", "the Wikidata subset", extra="wikidata")
    inputs.files()  # fail early, naming the missing file or folder
    subset = _Subset()
    _add_facts(subset, inputs)
    _add_properties(subset, inputs)
    if inputs.aliases:
        _add_aliases(subset, inputs.aliases)
    for entity, label in subset.labels.items():
        subset.triples.add(f"{_iri(ENTITY, entity)} {_iri(RDFS, 'label')} {_literal(label, language='en')} .")
    lines = sorted(subset.triples)
    with atomic_path(out) as tmp:
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return {"triples": len(lines), "entities": len(subset.labels)}


def rdf_format(path: Path):
    from pyoxigraph import RdfFormat

    name = RDF_FORMATS.get(Path(path).suffix.lower())
    if name is None:
        raise InputError(path, f"unknown RDF format; use one of: {', '.join(RDF_FORMATS)}")
    return getattr(RdfFormat, name)


def _bulk_load(rdf_file: Path, store_dir: Path) -> int:
    """Load a whole file into a new store folder (fast, not transactional); returns the triple count."""
    pyoxigraph = require("pyoxigraph", "the embedded Wikidata store", extra="wikidata")
    store = pyoxigraph.Store(str(store_dir))
    try:
        store.bulk_load(path=str(rdf_file), format=rdf_format(rdf_file))
    except SyntaxError as exc:
        raise InputError(rdf_file, f"invalid RDF: {exc}") from exc
    finally:
        store.flush()
    count = len(store)
    del store
    gc.collect()  # closes the RocksDB handle so another process (or a rename) can use the folder
    return count


def import_rdf(rdf_file: str | Path, store_dir: str | Path) -> int:
    """Load an N-Triples/Turtle file into the pyoxigraph store at `store_dir`; returns its triple count.

    All or nothing: a new store is built in a temporary folder and renamed into place; an existing
    store gets the file in one transaction (which holds the file in memory). Either way the
    file's name and sha256 are added to the folder's `kbench-import.json`.
    """
    pyoxigraph = require("pyoxigraph", "the embedded Wikidata store", extra="wikidata")
    rdf_file, store_dir = Path(rdf_file), Path(store_dir)
    if not rdf_file.is_file():
        raise InputError(rdf_file, "file not found")
    fmt = rdf_format(rdf_file)
    entry = {"file": rdf_file.name, "sha256": sha256_file(rdf_file)}
    if store_dir.is_dir() and any(store_dir.iterdir()):
        record = _import_record(store_dir)
        store = pyoxigraph.Store(str(store_dir))
        try:
            store.load(path=str(rdf_file), format=fmt)
        except SyntaxError as exc:
            raise InputError(rdf_file, f"invalid RDF: {exc}") from exc
        store.flush()
        count = len(store)
        del store
        gc.collect()
        write_json(store_dir / IMPORT_RECORD, {"imports": [*record, entry], "triples": count})
        return count
    store_dir.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{store_dir.name}.", dir=store_dir.parent))
    try:
        count = _bulk_load(rdf_file, building)
        write_json(building / IMPORT_RECORD, {"imports": [entry], "triples": count})
        if store_dir.is_dir():
            store_dir.rmdir()  # empty, checked above
        os.replace(building, store_dir)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return count


def _import_record(store_dir: Path) -> list[dict]:
    """The files imported into `store_dir` so far (none recorded: a store made before the record)."""
    import json

    path = store_dir / IMPORT_RECORD
    if not path.is_file():
        return []
    try:
        return list(json.loads(path.read_text(encoding="utf-8"))["imports"])
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(path, f"not a kbench import record: {exc}") from exc


_OPEN_STORES: dict[Path | tuple[Path, str], object] = {}


def open_imported_store(store_dir: Path, record: Path):
    """(read-only store, identity) for a folder made by `kbench wikidata import`; the identity
    hashes its import record, so another import into the folder changes it."""
    pyoxigraph = require("pyoxigraph", "the embedded Wikidata store", extra="wikidata")
    identity = f"oxigraph-import:sha256:{sha256_file(record)}"
    key = (Path(store_dir).resolve(), identity)
    if key not in _OPEN_STORES:
        _OPEN_STORES[key] = pyoxigraph.Store.read_only(str(store_dir))
    return _OPEN_STORES[key], identity


def open_cached_store(rdf_file: str | Path, cache_dir: str | Path):
    """(read-only store, identity) for `rdf_file`, building the store once per file content."""
    pyoxigraph = require("pyoxigraph", "the embedded Wikidata store", extra="wikidata")
    digest = sha256_file(rdf_file)
    final = Path(cache_dir) / "wikidata" / "stores" / digest
    if final in _OPEN_STORES:
        return _OPEN_STORES[final], f"oxigraph:sha256:{digest}"
    if not (final / ".kbench-complete").exists():
        final.parent.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}.", dir=final.parent))
        try:
            _bulk_load(Path(rdf_file), building)
            (building / ".kbench-complete").write_text(digest + "\n")
            shutil.rmtree(final, ignore_errors=True)  # a leftover without its completion mark
            try:
                os.replace(building, final)
            except OSError:
                if not (final / ".kbench-complete").exists():  # lost a race only if the winner finished
                    raise
        finally:
            shutil.rmtree(building, ignore_errors=True)
    store = pyoxigraph.Store.read_only(str(final))
    _OPEN_STORES[final] = store
    return store, f"oxigraph:sha256:{digest}"
