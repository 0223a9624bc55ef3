"""Stage `domain_taxonomy`: give each triplet a domain from Wikidata `instance of` (P31) classes.

MAPLE maps document entities to ten domains via `instance of` and drops triplets that do not fit
their document's domain. Definitions used here:

  * an entity's classes: its `wdt:P31` values, and with `follow_subclass = true` also their
    superclasses (`wdt:P31/wdt:P279*`);
  * an entity's domain: the first domain, in the mapping file's order, that lists one of its
    classes (so the file's order settles entities with classes in several domains);
  * the document's domain: the domain of the document's own entity (`doc_uri`, the article's
    Q-id); the subject's domain: the domain of `subject_id`;
  * the row's `domain`: the document's domain, or the subject's when the document has none.

Drops: `domain_mismatch` when both are known and differ (the triplet is about something else
than its document, MAPLE's "does not reflect their document's assigned domain"); `no_domain`
when neither is known and `require_domain` (default true). Added columns: `domain`,
`document_domain`, `subject_domain`.

The mapping file (`mapping`, TOML, relative to the recipe) is

    [domains]
    science = ["Q7187", "Q8054"]      # gene, protein
    geography = ["Q8502"]             # mountain

with at most `max_domains` domains (default 10). P31 look-ups use the same Wikidata client as
`verify_wikidata` (embedded store, or `--sparql-endpoint`), batched `VALUES` queries.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from kbench.construct.stage import Stage, StageOutput, filter_with_reason, register_stage
from kbench.construct.stages._wikidata_common import (
    WikidataParams,
    endpoint_option,
    knowledge_source,
    open_wikidata,
    store_deviations,
    wikidata_input_files,
)
from kbench.errors import InputError
from kbench.progress import progress
from kbench.sources.wikidata import PREFIXES, batched, id_from_iri, is_valid_id, validate_id


def load_domain_mapping(path: Path, max_domains: int) -> dict[str, list[str]]:
    """domain -> class Q-ids, in file order; errors name the file and key."""
    if not path.is_file():
        raise InputError(path, "domain mapping file not found")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, f"invalid TOML: {exc}") from exc
    unknown = sorted(set(raw) - {"domains"})
    if unknown or not isinstance(raw.get("domains"), dict) or not raw["domains"]:
        raise InputError(path, "expected one table [domains] of domain = [class Q-ids]", key=(unknown or ["domains"])[0])
    domains = raw["domains"]
    if len(domains) > max_domains:
        raise InputError(path, f"{len(domains)} domains; at most {max_domains} allowed", key="domains")
    seen: dict[str, str] = {}
    for name, classes in domains.items():
        if not isinstance(classes, list) or not classes:
            raise InputError(path, "expected a non-empty list of class Q-ids", key=f"domains.{name}")
        for qid in classes:
            if not (isinstance(qid, str) and is_valid_id(qid) and qid.startswith("Q")):
                raise InputError(path, f"{qid!r} is not a Wikidata item id", key=f"domains.{name}")
            if qid in seen:
                raise InputError(path, f"{qid} is listed under both {seen[qid]!r} and {name!r}", key=f"domains.{name}")
            seen[qid] = name
    return domains


def classes_query(ids: list[str], follow_subclass: bool) -> str:
    path = "wdt:P31/wdt:P279*" if follow_subclass else "wdt:P31"
    values = " ".join(f"wd:{validate_id(i)}" for i in ids)
    return PREFIXES + f"SELECT ?item ?class WHERE {{\n  VALUES ?item {{ {values} }}\n  ?item {path} ?class .\n}}\n"


#: The domain names MAPLE's text gives (Section 3.1); the rest of its ten are not named there.
PAPER_DOMAIN_NAMES = ("science", "history", "law")


@register_stage
class DomainTaxonomy(Stage):
    name = "domain_taxonomy"
    version = 2  # 2: knowledge_source recorded

    class Params(WikidataParams):
        mapping: str
        follow_subclass: bool = True
        require_domain: bool = True
        max_domains: int = 10

    def input_files(self) -> list[Path]:
        return wikidata_input_files(self.params, self.ctx) + [self.ctx.resolve(self.params.mapping)]

    def run_options(self) -> dict:
        return endpoint_option(self.ctx)  # another endpoint gives other classes: not reusable

    def deviations(self, details: dict) -> list:
        from kbench.protocol import Deviation

        domains = load_domain_mapping(self.ctx.resolve(self.params.mapping), self.params.max_domains)
        chosen = [name for name in domains if name not in PAPER_DOMAIN_NAMES]
        mapping = Deviation(
            id="domain-taxonomy-kbench-mapping",
            paper="MAPLE maps document entities to a custom taxonomy of ten domains via Wikidata `instance of` "
            "(its Table 4; the text names science, history, law)",
            kbench=f"the domains and their class lists come from {self.ctx.display_path(self.ctx.resolve(self.params.mapping))}"
            + (f"; domain names kbench chose: {', '.join(chosen)}" if chosen else "")
            + "; a class rule also drops domain_mismatch"
            + (" and no_domain" if self.params.require_domain else ""),
            effect="the `domain` column, which rows are kept, and every by-domain number",
        )
        checks = store_deviations(
            "domain-classes",
            "MAPLE reads the entities' `instance of` classes from Wikidata",
            "the `domain` of each row and the domain drops",
            details,
            self.params,
            self.ctx,
        )
        return [mapping, *checks]

    def entity_domains(self, ids: set[str], domains: dict[str, list[str]]) -> dict[str, str]:
        rank = {qid: (i, name) for i, (name, classes) in enumerate(domains.items()) for qid in classes}
        best: dict[str, tuple[int, str]] = {}
        wanted = sorted(i for i in ids if is_valid_id(i))
        with progress("domain_taxonomy: instance-of classes", len(wanted)) as advance:
            client = open_wikidata(self.params, self.ctx)
            for batch in batched(wanted, self.params.batch_size):
                for row in client.sparql.select(classes_query(batch, self.params.follow_subclass)):
                    item, cls = id_from_iri(row.get("item", "")), id_from_iri(row.get("class", ""))
                    if item and cls in rank and (item not in best or rank[cls] < best[item]):
                        best[item] = rank[cls]
                advance(len(batch))
        return {item: name for item, (_, name) in best.items()}

    def run(self, table) -> StageOutput:
        import polars as pl

        domains = load_domain_mapping(self.ctx.resolve(self.params.mapping), self.params.max_domains)
        ids = table.select(pl.concat_list("doc_uri", "subject_id").explode().drop_nulls().unique()).collect()
        found = self.entity_domains(set(ids.to_series().to_list()), domains)
        lookup = pl.LazyFrame(
            {"__id": list(found), "__domain": list(found.values())}, schema={"__id": pl.String, "__domain": pl.String}
        )
        out = (
            table.join(lookup, left_on="doc_uri", right_on="__id", how="left", maintain_order="left")
            .rename({"__domain": "document_domain"})
            .join(lookup, left_on="subject_id", right_on="__id", how="left", maintain_order="left")
            .rename({"__domain": "subject_domain"})
            .with_columns(domain=pl.coalesce("document_domain", "subject_domain"))
        )
        reason = pl.when(
            pl.col("document_domain").is_not_null()
            & pl.col("subject_domain").is_not_null()
            & (pl.col("document_domain") != pl.col("subject_domain"))
        ).then(pl.lit("domain_mismatch"))
        if self.params.require_domain:
            reason = reason.when(pl.col("domain").is_null()).then(pl.lit("no_domain"))
        split = filter_with_reason(out, reason.otherwise(pl.lit(None, dtype=pl.String)))
        split.details = {"knowledge_source": knowledge_source(self.params, self.ctx)}
        return split
