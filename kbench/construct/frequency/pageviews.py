"""The `pageviews` frequency source: monthly Wikipedia pageviews of each entity's article, summed
over a window (MAPLE), through `kbench.sources.pageviews.PageviewsClient`.

Per entity (the
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

from pathlib import Path
from typing import Literal

from kbench.construct.frequency import DROP_COLUMN, FREQUENCY_SOURCES, FrequencySource, SourceOptions
from kbench.construct.stages._wikidata_common import WikidataParams, endpoint_option, open_wikidata, wikidata_input_files
from kbench.errors import InputError
from kbench.sources.pageviews import DEFAULT_BASE_URL, PageviewsClient
from kbench.sources.wikidata import is_valid_id


@FREQUENCY_SOURCES.register("pageviews")
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

        from kbench.progress import progress

        o = self.options
        label_column, id_column = o.title_column or o.entity, f"{o.entity}_id"
        names = table.collect_schema().names()
        for column, key in ((label_column, "title_column"), (id_column, "entity")):
            if column not in names:
                raise InputError(self.ctx.recipe_path, f"the table has no column {column!r}", key=f"frequency_bin.options.{key}")
        entities = (
            table.select(pl.col(id_column).cast(pl.Utf8).alias("__id"), pl.col(label_column).cast(pl.Utf8).alias("__label"))
            .unique()
            .collect()
        )
        ids = sorted({i for i in entities["__id"].to_list() if i and is_valid_id(i)})
        sitelinks = self._sitelinks(ids)
        # one title per entity: its sitelink, else its (smallest) label
        titles: dict[str, str] = {}
        for entity_id, label in sorted(entities.iter_rows(), key=lambda r: (r[0] or "", r[1] or "")):
            key = entity_id or f"label:{label}"
            if key not in titles and (sitelinks.get(entity_id) or label):
                titles[key] = sitelinks.get(entity_id) or label
        client = PageviewsClient(
            self.ctx.cache_dir,
            base_url=o.base_url,
            project=o.project,
            access=o.access,
            agent=o.agent,
            start_month=o.start_month,
            months=o.months,
            months_per_request=o.months_per_request,
            min_interval_s=o.min_interval_s,
            max_attempts=o.max_attempts,
        )
        views: dict[str, int | None] = {}
        with progress("pageviews", total=len(set(titles.values())), unit="titles") as advance:
            for title in sorted(set(titles.values())):
                views[title] = client.total_views(title)
                advance(1)
        missing = sorted(k for k, t in titles.items() if views[t] is None)
        self._details = {
            "entities": len(titles),
            "titles_from_sitelinks": sum(1 for k in titles if k in sitelinks),
            "titles_from_labels": sum(1 for k in titles if k not in sitelinks),
            "missing_articles": len(missing),
            "missing_pageviews": o.missing_pageviews,
        }
        frequency, drop = [], []
        for k in titles:
            found = views[titles[k]]
            if found is None and o.missing_pageviews == "keep_as_zero":
                found = 0
            frequency.append(None if found is None else float(found))
            drop.append("pageviews_missing" if found is None else None)
        lookup = pl.LazyFrame(
            {"__key": list(titles), "frequency": frequency, DROP_COLUMN: drop},
            schema={"__key": pl.Utf8, "frequency": pl.Float64, DROP_COLUMN: pl.Utf8},
        )
        key = pl.coalesce(pl.col(id_column).cast(pl.Utf8), pl.lit("label:") + pl.col(label_column).cast(pl.Utf8))
        return table.with_columns(key.alias("__key")).join(lookup, on="__key", how="left", maintain_order="left").drop("__key")
