"""Wikidata over SPARQL: safe query text, and the batched look-ups the build stages need.

Contracts:
  * Ids are trusted only after `validate_id` / `is_valid_id`: exactly `^[QP][1-9][0-9]*$` (ASCII
    digits; no whitespace, no trailing newline). Nothing else is ever pasted into a query as an
    IRI, so an id can never change a query's structure.
  * No free text (a label, a name) is ever put into a query: labels only come back as data, so a
    hostile label (quotes, braces, `DELETE`) stays a string (tests/unit/test_sparql_text.py).
  * Every query starts with `PREFIXES` (the prefixes as Wikidata defines them) and never uses
    `SERVICE wikibase:label` (a Wikidata-only extension that the embedded store lacks).
  * `WikidataClient` batches ids into `VALUES` blocks of at most `batch_size` (default 200) ids and
    sorts them first, so the same input always gives the same queries (and so cache hits on reruns).

The data model is Wikidata's RDF: entities and properties are `wd:Q..`/`wd:P..`, English labels
are `rdfs:label "..."@en`, aliases `skos:altLabel`, truthy claims `wdt:P..`. The same queries run on
the embedded subset store and on https://query.wikidata.org/sparql.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbench.sources.sparql_client import SparqlClient

ENTITY = "http://www.wikidata.org/entity/"
DIRECT = "http://www.wikidata.org/prop/direct/"
WIKIBASE = "http://wikiba.se/ontology#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
SCHEMA = "http://schema.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"

PREFIXES = (
    f"PREFIX wd: <{ENTITY}>\n"
    f"PREFIX wdt: <{DIRECT}>\n"
    f"PREFIX wikibase: <{WIKIBASE}>\n"
    f"PREFIX rdfs: <{RDFS}>\n"
    f"PREFIX skos: <{SKOS}>\n"
    f"PREFIX schema: <{SCHEMA}>\n"
    f"PREFIX xsd: <{XSD}>\n"
)

DEFAULT_BATCH_SIZE = 200

#: A Wikidata item or property id; also used as a polars regex (`^...$`) for whole columns.
ID_PATTERN = r"[QP][1-9][0-9]*"
PROPERTY_PATTERN = r"P[1-9][0-9]*"
_ID_RE = re.compile(ID_PATTERN)


def is_valid_id(value: object) -> bool:
    """True for a Wikidata item or property id such as `Q42` or `P19`; False for anything else."""
    return isinstance(value, str) and _ID_RE.fullmatch(value) is not None


def validate_id(value: object) -> str:
    """Return `value` if it is a valid Wikidata id, else raise ValueError (the value shown with repr)."""
    if not is_valid_id(value):
        raise ValueError(f"not a Wikidata id (expected Q123 or P123): {value!r}")
    return value  # type: ignore[return-value]


def validate_property(value: object) -> str:
    """Like `validate_id`, for a property id (P123) only."""
    if not (is_valid_id(value) and value.startswith("P")):  # type: ignore[union-attr]
        raise ValueError(f"not a Wikidata property id (expected P123): {value!r}")
    return value  # type: ignore[return-value]


def id_from_iri(iri: str, base: str = ENTITY) -> str | None:
    """`http://www.wikidata.org/entity/Q42` -> `Q42` (or a `wdt:` IRI with base=DIRECT); None for any other IRI."""
    if iri.startswith(base) and is_valid_id(iri[len(base) :]):
        return iri[len(base) :]
    return None


def _values(ids: Iterable[str]) -> str:
    return " ".join(f"wd:{validate_id(i)}" for i in ids)


def entities_query(ids: Iterable[str]) -> str:
    """Which of `ids` exist (have any triple as subject), with their English label when they have one."""
    return PREFIXES + (
        "SELECT ?item ?label WHERE {\n"
        f"  VALUES ?item {{ {_values(ids)} }}\n"
        "  FILTER EXISTS { ?item ?anyProperty ?anyValue }\n"
        '  OPTIONAL { ?item rdfs:label ?label . FILTER(LANG(?label) = "en") }\n'
        "}\n"
    )


def object_count_query(pairs: Iterable[tuple[str, str]]) -> str:
    """How many distinct `wdt:<relation>` values each (relation, subject) pair has (pairs with none are absent)."""
    values = " ".join(f"(wd:{validate_id(subject)} wdt:{validate_property(relation)})" for relation, subject in pairs)
    return PREFIXES + (
        "SELECT ?item ?property (COUNT(DISTINCT ?value) AS ?count) WHERE {\n"
        f"  VALUES (?item ?property) {{ {values} }}\n"
        "  ?item ?property ?value .\n"
        "}\nGROUP BY ?item ?property\n"
    )


def sitelinks_query(ids: Iterable[str], site: str) -> str:
    """The article of each of `ids` on `site` (a wiki's base IRI, e.g. https://en.wikipedia.org/),
    with its title (`schema:name`) where the data has one. Wikidata's RDF writes a sitelink as
    `<https://en.wikipedia.org/wiki/Douglas_Adams> schema:about wd:Q42 ; schema:isPartOf
    <https://en.wikipedia.org/> ; schema:name "Douglas Adams"@en`."""
    if not re.fullmatch(r"https://[a-z0-9.-]+/", site):
        raise ValueError(f"not a wiki base IRI (https://host/): {site!r}")
    return PREFIXES + (
        "SELECT ?item ?article ?title WHERE {\n"
        f"  VALUES ?item {{ {_values(ids)} }}\n"
        f"  ?article schema:about ?item ; schema:isPartOf <{site}> .\n"
        "  OPTIONAL { ?article schema:name ?title }\n"
        "}\n"
    )


def title_from_article_iri(iri: str, site: str) -> str | None:
    """`https://en.wikipedia.org/wiki/AC%2FDC` -> `AC/DC` (underscores become spaces); None for another site."""
    from urllib.parse import unquote

    prefix = site + "wiki/"
    if not iri.startswith(prefix) or len(iri) == len(prefix):
        return None
    return unquote(iri[len(prefix) :]).replace("_", " ")


def batched(items: list[str], size: int) -> Iterator[list[str]]:
    if size < 1:
        raise ValueError(f"batch size must be at least 1, got {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


class WikidataClient:
    """The look-ups the build stages make, batched over a `SparqlClient` (embedded or HTTP)."""

    def __init__(self, sparql: SparqlClient, batch_size: int = DEFAULT_BATCH_SIZE, on_batch: Callable[[int], None] | None = None):
        if batch_size < 1:
            raise ValueError(f"batch size must be at least 1, got {batch_size}")
        self.sparql = sparql
        self.batch_size = batch_size
        self._on_batch = on_batch  # progress hook: called with the number of ids just handled

    def _batches(self, items: Iterable) -> Iterator[list]:
        for batch in batched(sorted(set(items)), self.batch_size):
            yield batch
            if self._on_batch:
                self._on_batch(len(batch))

    def entities(self, ids: Iterable[str]) -> dict[str, str | None]:
        """The ids among `ids` that exist, mapped to their English label (None when unlabelled)."""
        found: dict[str, str | None] = {}
        for batch in self._batches(validate_id(i) for i in ids):
            for row in self.sparql.select(entities_query(batch)):
                entity = id_from_iri(row.get("item", ""))
                if entity is None:
                    continue
                label = row.get("label")
                # An entity has one English label on Wikidata; keep the smallest if a store has more.
                if entity not in found or (label is not None and (found[entity] is None or label < found[entity])):
                    found[entity] = label
        return found

    def sitelinks(self, ids: Iterable[str], site: str) -> dict[str, str]:
        """The article title on `site` of each of `ids` that has one (the smallest if a store has several)."""
        titles: dict[str, str] = {}
        for batch in self._batches(validate_id(i) for i in ids):
            for row in self.sparql.select(sitelinks_query(batch, site)):
                entity = id_from_iri(row.get("item", ""))
                title = row.get("title") or title_from_article_iri(row.get("article", ""), site)
                if entity is not None and title and (entity not in titles or title < titles[entity]):
                    titles[entity] = title
        return titles

    def object_counts(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """Distinct `wdt:<relation>` values per (relation, subject) pair; pairs with no value map to 0.

        Pairs of all relations share batches, so only the last batch is ever partly filled.
        """
        counts: dict[tuple[str, str], int] = {}
        for batch in self._batches((validate_property(r), validate_id(s)) for r, s in pairs):
            counts.update(dict.fromkeys(batch, 0))
            for row in self.sparql.select(object_count_query(batch)):
                subject = id_from_iri(row.get("item", ""))
                relation = id_from_iri(row.get("property", ""), base=DIRECT)
                if subject is not None and relation is not None:
                    counts[(relation, subject)] = int(row["count"])
        return counts
