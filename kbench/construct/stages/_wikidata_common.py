"""What the Wikidata stages share: where the data comes from, and opening the client for a run.

Exactly one data source per stage:
  * `ctx.options["sparql_endpoint"]` (from `kbench build --sparql-endpoint URL`): HTTP, and the
    store settings below are not used;
  * `store = "file.nt"` (or `.ttl`): the embedded store built from that file; or
    `store = "stores/wikidata"`: a store folder made by `kbench wikidata import` (e.g. of a
    truthy-dump slice; its `kbench-import.json` names the imported files and their sha256);
  * `[stages.subset_from]` with the LAMA input locations: kbench writes the Wikidata-shaped subset
    itself (cached by the inputs' sha256) and builds the embedded store from it, so a fresh
    machine needs no manual step.
Results from an HTTP endpoint are cached under `<cache>/sparql/` unless `cache = false`; the
embedded store is local and answers faster than the cache files can be written, so its answers
are not cached (and a finished stage is never rerun anyway: the runner's resume markers).

What a check was run against decides what the dataset may claim (a store written from the inputs
verifies nothing the inputs did not already say), so every stage records its `knowledge_source`
(`knowledge_source` below) in stats.json; the manifest and the card repeat it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kbench.construct.context import StageContext
from kbench.construct.stage import Stage, StageParams
from kbench.errors import UserError
from kbench.io import stable_hash
from kbench.sources.wikidata import DEFAULT_BATCH_SIZE, WikidataClient
from kbench.sources.wikidata_store import IMPORT_RECORD

SUBSET_WRITER_VERSION = 2


class SubsetFrom(BaseModel):
    """LAMA input locations (relative to the recipe file) from which the subset is written."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    trex_dir: Optional[str] = None
    relations: Optional[str] = None
    google_re_dir: Optional[str] = None
    autoprompt_dir: Optional[str] = None
    aliases: Optional[str] = None
    #: REBEL-format documents instead of LAMA inputs (`kbench.sources.rebel_subset`).
    rebel_documents: Optional[str] = None


class WikidataParams(StageParams):
    store: Optional[str] = None
    subset_from: Optional[SubsetFrom] = None
    batch_size: int = Field(DEFAULT_BATCH_SIZE, ge=1, le=1000)
    cache: bool = True
    #: HTTP only: seconds per request; attempts per query before the build stops with an error;
    #: the first wait between attempts in seconds, doubled each time (a `Retry-After` wins).
    http_timeout: float = Field(60.0, gt=0)
    http_attempts: int = Field(5, ge=1, le=20)
    http_backoff: float = Field(1.0, ge=0, le=60)

    @model_validator(mode="after")
    def _one_source(self):
        if (self.store is None) == (self.subset_from is None):
            raise ValueError("set exactly one of `store` (an N-Triples/Turtle file) or `subset_from` (LAMA inputs)")
        return self


#: The three kinds of knowledge source, as the manifest, stats.json and the card name them.
SOURCE_KINDS = {
    "inputs": "embedded store built from the inputs",
    "import": "imported Wikidata dump or subset",
    "endpoint": "live endpoint",
}


def public_url(url: str) -> str:
    """`url` without user, password, query or fragment (where tokens hide), for records."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _store_path(params: WikidataParams, ctx: StageContext) -> Path:
    return ctx.resolve(params.store)


def knowledge_source(params: WikidataParams, ctx: StageContext) -> dict:
    """What this stage's checks ran against: `kind` (a SOURCE_KINDS key), its description, and
    the endpoint URL (credentials removed) or the store's files with their sha256."""
    import json

    from kbench.io import sha256_file

    endpoint = ctx.options.get("sparql_endpoint")
    if endpoint:
        return {"kind": "endpoint", "description": SOURCE_KINDS["endpoint"], "url": public_url(str(endpoint))}
    if params.store is None:
        files = [{"file": ctx.display_path(p), "sha256": sha256_file(p)} for p in wikidata_input_files(params, ctx)]
        return {"kind": "inputs", "description": SOURCE_KINDS["inputs"], "files": files}
    store = _store_path(params, ctx)
    if store.is_dir():
        files = json.loads((store / IMPORT_RECORD).read_text(encoding="utf-8"))["imports"]
    else:
        files = [{"file": store.name, "sha256": sha256_file(store)}]
    return {"kind": "import", "description": SOURCE_KINDS["import"], "store": ctx.display_path(store), "files": files}


def endpoint_option(ctx: StageContext) -> dict:
    """The run option that changes a Wikidata stage's output (see `Stage.run_options`)."""
    endpoint = ctx.options.get("sparql_endpoint")
    return {"sparql_endpoint": str(endpoint)} if endpoint else {}


def subset_inputs(params: WikidataParams, ctx: StageContext):
    from kbench.sources.wikidata_store import SubsetInputs

    s = params.subset_from
    assert s is not None
    resolve = lambda value: ctx.resolve(value) if value else None  # noqa: E731
    return SubsetInputs(
        trex_dir=resolve(s.trex_dir),
        relations=resolve(s.relations),
        google_re_dir=resolve(s.google_re_dir),
        autoprompt_dir=resolve(s.autoprompt_dir),
        aliases=resolve(s.aliases),
    )


def wikidata_input_files(params: WikidataParams, ctx: StageContext) -> list[Path]:
    if params.store is not None:
        store = _store_path(params, ctx)
        if store.is_dir():
            if not (store / IMPORT_RECORD).is_file():
                raise UserError(f"{store}: a store folder must be made by `kbench wikidata import` (no {IMPORT_RECORD})")
            return [store / IMPORT_RECORD]
        return [store]
    if params.subset_from.rebel_documents:
        from kbench.sources.documents import document_files

        return document_files(ctx.resolve(params.subset_from.rebel_documents))
    return subset_inputs(params, ctx).files()


def _subset_file(params: WikidataParams, ctx: StageContext) -> Path:
    """The subset N-Triples for these inputs, written once into the cache."""
    from kbench.io import sha256_file
    from kbench.sources.wikidata_store import write_lama_subset

    if params.subset_from.rebel_documents:
        from kbench.sources.rebel_subset import cached_rebel_subset

        return cached_rebel_subset(ctx.resolve(params.subset_from.rebel_documents), ctx.cache_dir)
    inputs = subset_inputs(params, ctx)
    key = stable_hash(
        {
            "writer": SUBSET_WRITER_VERSION,
            "files": [[p.name, sha256_file(p)] for p in inputs.files()],
            "settings": params.subset_from.model_dump(),
        }
    )
    target = ctx.cache_dir / "wikidata" / "subsets" / f"{key}.nt"
    if not target.exists():
        write_lama_subset(inputs, target)
    return target


def open_wikidata(params: WikidataParams, ctx: StageContext, on_batch=None) -> WikidataClient:
    """The client this stage should use: HTTP when an endpoint is given, else the embedded store."""
    from kbench.sources.sparql_cache import QueryCache
    from kbench.sources.sparql_client import EmbeddedTransport, HttpTransport, SparqlClient

    endpoint = ctx.options.get("sparql_endpoint")
    if endpoint:
        transport = HttpTransport(
            str(endpoint), timeout=params.http_timeout, max_attempts=params.http_attempts, backoff=params.http_backoff
        )
    else:
        from kbench.sources.wikidata_store import open_cached_store, open_imported_store

        rdf_file = _store_path(params, ctx) if params.store is not None else _subset_file(params, ctx)
        if rdf_file.is_dir():
            store, identity = open_imported_store(rdf_file, rdf_file / IMPORT_RECORD)
        elif rdf_file.is_file():
            store, identity = open_cached_store(rdf_file, ctx.cache_dir)
        else:
            raise UserError(f"Wikidata store file {rdf_file} does not exist")
        transport = EmbeddedTransport(store, identity)
    cache = QueryCache(ctx.cache_dir / "sparql") if params.cache and endpoint else None
    return WikidataClient(SparqlClient(transport, cache), batch_size=params.batch_size, on_batch=on_batch)


def property_column(table) -> str:
    """The column holding each row's Wikidata property: `wikidata_property` where the table has it
    (LAMA: Google-RE's relations have ids of their own, `google_re:place_of_birth`, and P19 here),
    else `relation`."""
    return "wikidata_property" if "wikidata_property" in table.collect_schema().names() else "relation"


def present(column: str):
    """Polars: the cell holds a non-blank value."""
    import polars as pl

    return (pl.col(column).cast(pl.Utf8).str.strip_chars().str.len_chars() > 0).fill_null(False)


def matches(column: str, pattern: str):
    """Polars: the whole cell matches `pattern` (the same regex `is_valid_id` uses)."""
    import polars as pl

    return pl.col(column).cast(pl.Utf8).str.contains(f"^{pattern}$").fill_null(False)


def store_deviations(check: str, paper: str, effect: str, details: dict, params: WikidataParams, ctx: StageContext):
    """The protocol entry of a Wikidata check that did not run against Wikidata: a store built
    from the build's own inputs, or an endpoint that is not wikidata.org. `check` prefixes the id."""
    from urllib.parse import urlsplit

    from kbench.protocol import Deviation

    source = details.get("knowledge_source") or {}
    endpoint = ctx.options.get("sparql_endpoint")
    kind = source.get("kind") or ("endpoint" if endpoint else "inputs" if params.store is None else "import")
    if kind == "inputs":
        return [
            Deviation(
                id=f"{check}-store-from-inputs",
                paper=paper,
                kbench="checked against a store kbench built from this build's own inputs, not Wikidata: "
                "a check passes whenever the inputs say so",
                effect=effect,
            )
        ]
    url = source.get("url") or (public_url(str(endpoint)) if endpoint else "")
    host = urlsplit(url).hostname or ""
    if kind == "endpoint" and not (host == "wikidata.org" or host.endswith(".wikidata.org")):
        return [Deviation(id=f"{check}-endpoint-not-wikidata", paper=paper, kbench=f"checked against {url}", effect=effect)]
    return []


class WikidataCheck(Stage):
    """A stage that checks rows against Wikidata (`verify_wikidata`, `single_answer`): its inputs, its
    endpoint option and its deviation (`store_deviations` of `check`)."""

    #: (the deviation's check name, what the paper does, the effect of kbench's way), for `store_deviations`
    check: tuple[str, str, str]

    def input_files(self) -> list[Path]:
        return wikidata_input_files(self.params, self.ctx)

    def run_options(self) -> dict:
        return endpoint_option(self.ctx)

    def deviations(self, details: dict) -> list:
        return store_deviations(*self.check, details, self.params, self.ctx)
