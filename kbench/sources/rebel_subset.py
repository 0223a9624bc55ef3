"""A Wikidata-shaped N-Triples subset written from REBEL-format documents (the embedded demo store).

What the documents tell us, written as Wikidata would (same data model as
`kbench.sources.wikidata_store`, which writes the LAMA subset):
  * each annotated triple whose subject and object are Q-ids: `wd:S wdt:P wd:O` (dates and other
    literal objects are left out: the MAPLE stages reject literal objects before asking Wikidata);
  * one English `rdfs:label` per entity: the document title for the article's own entity,
    otherwise its most frequent mention surface form (ties: the alphabetically first), and every
    other surface form as `skos:altLabel`;
  * each property: label (its most frequent predicate surface form), `a wikibase:Property`,
    `wikibase:directClaim wdt:P..`.
The sample holds `instance of` (P31) and `subclass of` (P279) only where the text states them, so
the domain taxonomy finds fewer classes here than on the real Wikidata. Output is sorted and
deduplicated: equal inputs give equal bytes.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

from kbench.errors import require
from kbench.io import atomic_path
from kbench.sources.wikidata import DIRECT, ENTITY, RDF, RDFS, SKOS, WIKIBASE

QID = re.compile(r"^Q[1-9]\d*$")
PID = re.compile(r"^P[1-9]\d*$")


def _best(counter: Counter) -> str:
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def write_rebel_subset(documents: Path, out: Path) -> dict[str, int]:
    """Write the subset of the documents under `documents` to `out` (atomically); returns counts."""
    require("pyoxigraph", "the Wikidata subset", extra="wikidata")
    from pyoxigraph import Literal

    from kbench.sources.documents import iter_documents

    titles: dict[str, str] = {}
    names: dict[str, Counter] = defaultdict(Counter)
    property_names: dict[str, Counter] = defaultdict(Counter)
    triples: set[str] = set()
    for _, _, doc in iter_documents(documents, required=("title",)):
        if QID.match(str(doc.get("uri", ""))):
            titles.setdefault(doc["uri"], doc["title"])
        for ent in doc.get("entities") or []:
            if QID.match(str(ent.get("uri", ""))) and ent.get("surfaceform"):
                names[ent["uri"]][ent["surfaceform"]] += 1
        for t in doc.get("triples") or []:
            s, p, o = (t.get(k) or {} for k in ("subject", "predicate", "object"))
            if not (QID.match(str(s.get("uri", ""))) and PID.match(str(p.get("uri", "")))):
                continue
            if p.get("surfaceform"):
                property_names[p["uri"]][p["surfaceform"]] += 1
            for ent in (s, o):
                if QID.match(str(ent.get("uri", ""))) and ent.get("surfaceform"):
                    names[ent["uri"]][ent["surfaceform"]] += 1
            if QID.match(str(o.get("uri", ""))):
                triples.add(f"<{ENTITY}{s['uri']}> <{DIRECT}{p['uri']}> <{ENTITY}{o['uri']}> .")

    def label(node: str, text: str, predicate: str) -> str:
        return f"<{ENTITY}{node}> <{predicate}> {Literal(text, language='en')} ."

    for qid in sorted(set(names) | set(titles)):
        main = titles.get(qid) or _best(names[qid])
        triples.add(label(qid, main, f"{RDFS}label"))
        triples.update(label(qid, alt, f"{SKOS}altLabel") for alt in names[qid] if alt != main)
    for pid, counter in property_names.items():
        triples.add(label(pid, _best(counter), f"{RDFS}label"))
        triples.add(f"<{ENTITY}{pid}> <{RDF}type> <{WIKIBASE}Property> .")
        triples.add(f"<{ENTITY}{pid}> <{WIKIBASE}directClaim> <{DIRECT}{pid}> .")
    lines = sorted(triples)
    with atomic_path(out) as tmp:
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return {"triples": len(lines), "entities": len(set(names) | set(titles)), "properties": len(property_names)}


def cached_rebel_subset(documents: Path, cache_dir: Path) -> Path:
    """The subset file for `documents`, written once into the cache (keyed by the files' sha256)."""
    from kbench.io import sha256_file, stable_hash
    from kbench.sources.documents import document_files

    key = stable_hash({"writer": "rebel-subset-1", "files": [[p.name, sha256_file(p)] for p in document_files(documents)]})
    target = cache_dir / "wikidata" / "subsets" / f"rebel-{key}.nt"
    if not target.exists():
        write_rebel_subset(documents, target)
    return target
