"""Wikipedia pageviews (Wikimedia REST API) as an entity-frequency source.

`PageviewsClient.total_views(article)` sums the monthly views of one article over a window of
months (MAPLE: March 2021 - February 2022, 12 months), using

    {base_url}/metrics/pageviews/per-article/{project}/{access}/{agent}/{article}/monthly/{start}/{end}

with start/end as YYYYMMDD00. Windows longer than `months_per_request` are fetched in several
requests ("pages" of months) and summed.

Behaviour against the real service (https://wikimedia.org/api/rest_v1, which asks clients for a
descriptive User-Agent and to stay under ~100 requests/s):
  * a descriptive User-Agent naming kbench and a contact URL;
  * at most one request per `min_interval_s` (rate limiting, per client);
  * 429 and 5xx are retried up to `max_attempts` times, waiting `Retry-After` seconds when the
    server sends it and exponential backoff otherwise; then a `UserError`;
  * 404 (article unknown, or no views recorded in the months asked) is not 0 views: a window
    whose every request answers 404 is *missing* (`total_views` returns None); a window with data
    for some of its months sums those months;
  * an on-disk JSON cache, one file per (endpoint, article, window), written atomically; an entry
    whose stored key does not match is ignored and fetched again. Rerunning after an interrupt
    only asks for the articles not yet cached.

`Pageviews` registers the source `pageviews` for the `frequency_bin` stage. Per entity (the
`<entity>_id` column, or the label where the id is null):
  * the article title is the entity's English Wikipedia sitelink (`schema:about` /
    `schema:isPartOf <https://en.wikipedia.org/>` in Wikidata's RDF), looked up through
    `options.wikidata` (the Wikidata stages' settings: `store` or `subset_from`; `kbench build
    --sparql-endpoint URL` asks that endpoint instead, as those stages do). An entity without a
    sitelink there, or every entity when `wikidata` is not set, falls back to its label
    (`title_column`, default the entity's name column): labels are often not article titles
    (disambiguation, redirects), so the fallbacks are counted;
  * a missing article (404 for the whole window) is dropped (`missing_pageviews = "drop"`, the
    default: an unknown popularity is not the least popular, and counting it as 0 would fill the
    tail with mislinked entities) with reason `pageviews_missing`, or counted as 0 views
    (`"keep_as_zero"`, what kbench did before it told the two apart).
`details()` reports entities, titles from sitelinks / labels and missing articles (stats.json).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from kbench.build.stages._wikidata_common import WikidataParams, endpoint_option, open_wikidata, wikidata_input_files
from kbench.errors import InputError, UserError
from kbench.io import read_json, stable_hash, write_json
from kbench.sources.frequency import (
    DROP_COLUMN,
    FrequencySource,
    SourceOptions,
    register_frequency_source,
)
from kbench.sources.wikidata import is_valid_id
from kbench.sources.user_agent import user_agent

DEFAULT_BASE_URL = "https://wikimedia.org/api/rest_v1"


def month_window(start_month: str, months: int) -> list[tuple[int, int]]:
    """[(year, month), ...] for `months` consecutive months from "YYYY-MM"."""
    try:
        year, month = (int(x) for x in start_month.split("-"))
        if not 1 <= month <= 12:
            raise ValueError
    except ValueError:
        raise UserError(f"start_month must look like 2021-03, got {start_month!r}") from None
    if months < 1:
        raise UserError(f"months must be at least 1, got {months}")
    out = []
    for i in range(months):
        y, m = divmod(month - 1 + i, 12)
        out.append((year + y, m + 1))
    return out


class PageviewsClient:
    def __init__(self, cache_dir: Path, *, base_url: str = DEFAULT_BASE_URL, project: str = "en.wikipedia",
                 access: str = "all-access", agent: str = "user", start_month: str = "2021-03", months: int = 12,
                 months_per_request: int = 12, min_interval_s: float = 0.02, max_attempts: int = 5,
                 backoff_s: float = 1.0, timeout_s: float = 30.0):
        import requests

        self.base_url = base_url.rstrip("/")
        self.project, self.access, self.agent = project, access, agent
        self.window = month_window(start_month, months)
        self.months_per_request = max(1, months_per_request)
        self.min_interval_s, self.max_attempts, self.backoff_s, self.timeout_s = min_interval_s, max_attempts, backoff_s, timeout_s
        self.cache_dir = cache_dir / "pageviews"
        self.session = requests.Session()
        self.session.headers["User-Agent"] = user_agent()
        self.requests_sent = 0
        self.cache_hits = 0
        self._last_request = 0.0

    def _url(self, article: str, first: tuple[int, int], last: tuple[int, int]) -> str:
        title = quote(article.strip().replace(" ", "_"), safe="")
        start = f"{first[0]:04d}{first[1]:02d}0100"
        end = f"{last[0]:04d}{last[1]:02d}0100"
        return (f"{self.base_url}/metrics/pageviews/per-article/{self.project}/{self.access}/{self.agent}/"
                f"{title}/monthly/{start}/{end}")

    def _get(self, url: str) -> int | None:
        """Views summed over one response; None for 404 (no such article, or no data in those months)."""
        import requests

        for attempt in range(1, self.max_attempts + 1):
            wait = self._last_request + self.min_interval_s - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self._last_request = time.monotonic()
            self.requests_sent += 1
            try:
                response = self.session.get(url, timeout=self.timeout_s)
            except requests.RequestException as exc:
                if attempt == self.max_attempts:
                    raise UserError(f"pageviews request failed after {attempt} attempts: {exc}") from exc
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
                continue
            if response.status_code == 404:
                return None
            if response.status_code == 429 or response.status_code >= 500:
                if attempt == self.max_attempts:
                    raise UserError(f"pageviews API answered {response.status_code} {attempt} times for {url}")
                retry_after = response.headers.get("Retry-After", "")
                time.sleep(float(retry_after) if retry_after.isdigit() else self.backoff_s * 2 ** (attempt - 1))
                continue
            if response.status_code != 200:
                raise UserError(f"pageviews API answered {response.status_code} for {url}")
            try:
                items = response.json()["items"]
                return sum(int(item["views"]) for item in items)
            except (ValueError, KeyError, TypeError) as exc:
                raise UserError(f"pageviews API sent an unexpected body for {url}") from exc
        raise AssertionError("unreachable")

    def total_views(self, article: str) -> int | None:
        """Views over the window; None when no request of the window found the article (all 404)."""
        # "v2": older entries stored a 404 as 0 views; they must not be read as such
        key = stable_hash(["v2", self.base_url, self.project, self.access, self.agent, article, self.window])
        path = self.cache_dir / f"{key}.json"
        if path.exists():
            try:
                entry = read_json(path)
                entry = entry if isinstance(entry, dict) else {}
                views = entry.get("views", "absent")
                if entry.get("key") == key and (views is None or isinstance(views, int)):  # None: missing article
                    self.cache_hits += 1
                    return views
            except InputError:
                pass  # a damaged entry is fetched again
        found = []
        step = self.months_per_request
        for i in range(0, len(self.window), step):
            chunk = self.window[i:i + step]
            views = self._get(self._url(article, chunk[0], chunk[-1]))
            if views is not None:
                found.append(views)
        total = sum(found) if found else None
        write_json(path, {"key": key, "article": article, "window": self.window, "views": total})
        return total


@register_frequency_source
class Pageviews(FrequencySource):
    """Monthly Wikipedia pageviews of the entity's article, summed over the window."""

    name = "pageviews"

    class Options(SourceOptions):
        entity: Literal["subject", "object"] = "subject"
        title_column: str | None = None  # the fallback title column; default: the entity's name column
        #: Where the sitelinks are looked up (the Wikidata stages' settings); None: titles from labels.
        wikidata: WikidataParams | None = None
        missing_pageviews: Literal["drop", "keep_as_zero"] = "drop"
        base_url: str = DEFAULT_BASE_URL
        project: str = "en.wikipedia"
        access: str = "all-access"
        agent: str = "user"
        start_month: str = "2021-03"
        months: int = 12
        months_per_request: int = 12
        min_interval_s: float = 0.02
        max_attempts: int = 5

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        self._details: dict = {}

    def input_files(self) -> list[Path]:
        return wikidata_input_files(self.options.wikidata, self.ctx) if self.options.wikidata else []

    def details(self) -> dict:
        return self._details

    def run_options(self) -> dict:
        return endpoint_option(self.ctx) if self.options.wikidata else {}

    def _sitelinks(self, ids: list[str]) -> dict[str, str]:
        if self.options.wikidata is None or not ids:
            return {}
        site = f"https://{self.options.project}.org/"
        return open_wikidata(self.options.wikidata, self.ctx).sitelinks(ids, site)

    def frequency(self, table):
        import polars as pl
        from rich.progress import Progress

        o = self.options
        label_column, id_column = o.title_column or o.entity, f"{o.entity}_id"
        names = table.collect_schema().names()
        for column, key in ((label_column, "title_column"), (id_column, "entity")):
            if column not in names:
                raise InputError(self.ctx.recipe_path, f"the table has no column {column!r}", key=f"frequency_bin.options.{key}")
        entities = (table.select(pl.col(id_column).cast(pl.Utf8).alias("__id"), pl.col(label_column).cast(pl.Utf8).alias("__label"))
                    .unique().collect())
        ids = sorted({i for i in entities["__id"].to_list() if i and is_valid_id(i)})
        sitelinks = self._sitelinks(ids)
        # one title per entity: its sitelink, else its (smallest) label
        titles: dict[str, str] = {}
        for entity_id, label in sorted(entities.iter_rows(), key=lambda r: (r[0] or "", r[1] or "")):
            key = entity_id or f"label:{label}"
            if key not in titles and (sitelinks.get(entity_id) or label):
                titles[key] = sitelinks.get(entity_id) or label
        client = PageviewsClient(self.ctx.cache_dir, base_url=o.base_url, project=o.project, access=o.access,
                                 agent=o.agent, start_month=o.start_month, months=o.months,
                                 months_per_request=o.months_per_request, min_interval_s=o.min_interval_s,
                                 max_attempts=o.max_attempts)
        views: dict[str, int | None] = {}
        with Progress(transient=True) as progress:
            task = progress.add_task("pageviews", total=len(set(titles.values())))
            for title in sorted(set(titles.values())):
                views[title] = client.total_views(title)
                progress.advance(task)
        missing = sorted(k for k, t in titles.items() if views[t] is None)
        self._details = {
            "entities": len(titles), "titles_from_sitelinks": sum(1 for k in titles if k in sitelinks),
            "titles_from_labels": sum(1 for k in titles if k not in sitelinks),
            "missing_articles": len(missing), "missing_pageviews": o.missing_pageviews,
        }
        frequency, drop = [], []
        for k in titles:
            found = views[titles[k]]
            if found is None and o.missing_pageviews == "keep_as_zero":
                found = 0
            frequency.append(None if found is None else float(found))
            drop.append("pageviews_missing" if found is None else None)
        lookup = pl.LazyFrame({"__key": list(titles), "frequency": frequency, DROP_COLUMN: drop},
                              schema={"__key": pl.Utf8, "frequency": pl.Float64, DROP_COLUMN: pl.Utf8})
        key = pl.coalesce(pl.col(id_column).cast(pl.Utf8), pl.lit("label:") + pl.col(label_column).cast(pl.Utf8))
        return (table.with_columns(key.alias("__key"))
                .join(lookup, on="__key", how="left", maintain_order="left").drop("__key"))
