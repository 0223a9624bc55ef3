"""The pageviews client against a local HTTP server with recorded Wikimedia responses."""

from __future__ import annotations

import polars as pl
import pytest
from werkzeug import Response

from kbench.construct.context import StageContext
from kbench.errors import UserError
from kbench.construct.frequency import make_source
from kbench.sources.pageviews import PageviewsClient, month_window

PREFIX = "/api/rest_v1/metrics/pageviews/per-article/en.wikipedia/all-access/user"


def _recorded(article: str, months: list[tuple[str, int]]) -> dict:
    """The shape the real API returns (fields as recorded from wikimedia.org)."""
    return {"items": [{"project": "en.wikipedia", "article": article, "granularity": "monthly",
                       "timestamp": f"{ym}0100", "access": "all-access", "agent": "user", "views": v}
                      for ym, v in months]}


def _client(tmp_path, httpserver, **kw):
    return PageviewsClient(tmp_path / "cache", base_url=httpserver.url_for("/api/rest_v1"), min_interval_s=0,
                           backoff_s=0, **kw)


def test_window_spans_years():
    w = month_window("2021-03", 12)
    assert w[0] == (2021, 3) and w[-1] == (2022, 2) and len(w) == 12
    with pytest.raises(UserError):
        month_window("2021-13", 12)


def test_months_fetched_in_pages_and_summed_then_cached(tmp_path, httpserver):
    httpserver.expect_ordered_request(f"{PREFIX}/Graham_Land/monthly/2021030100/2021080100").respond_with_json(
        _recorded("Graham_Land", [("202103", 100), ("202104", 50), ("202105", 7)]))
    httpserver.expect_ordered_request(f"{PREFIX}/Graham_Land/monthly/2021090100/2022020100").respond_with_json(
        _recorded("Graham_Land", [("202109", 3)]))
    client = _client(tmp_path, httpserver, months_per_request=6)
    assert client.total_views("Graham Land") == 160
    assert client.requests_sent == 2
    httpserver.check_assertions()
    # a fresh client (a rerun) reads the cache and sends nothing
    again = _client(tmp_path, httpserver, months_per_request=6)
    assert again.total_views("Graham Land") == 160 and again.requests_sent == 0 and again.cache_hits == 1
    assert "kbench/" in httpserver.log[0][0].headers["User-Agent"]


def test_missing_article_is_none_not_zero_and_titles_are_escaped(tmp_path, httpserver):
    # the server decodes the path for matching; the raw request line shows the slash was escaped
    httpserver.expect_oneshot_request(f"{PREFIX}/AC/DC/monthly/2021030100/2022020100").respond_with_json(
        {"type": "https://mediawiki.org/wiki/HyperSwitch/errors/not_found", "title": "Not found."}, status=404)
    assert _client(tmp_path, httpserver).total_views("AC/DC") is None
    environ = httpserver.log[0][0].environ
    assert "/AC%2FDC/" in environ.get("REQUEST_URI", environ.get("RAW_URI", ""))
    again = _client(tmp_path, httpserver)  # "missing" is cached too: no second request
    assert again.total_views("AC/DC") is None and again.requests_sent == 0 and again.cache_hits == 1


def test_a_window_with_data_in_some_months_sums_those(tmp_path, httpserver):
    httpserver.expect_request(f"{PREFIX}/New_Town/monthly/2021030100/2021080100").respond_with_json(
        {"title": "Not found."}, status=404)  # the article did not exist yet
    httpserver.expect_request(f"{PREFIX}/New_Town/monthly/2021090100/2022020100").respond_with_json(
        _recorded("New_Town", [("202112", 4), ("202201", 6)]))
    assert _client(tmp_path, httpserver, months_per_request=6).total_views("New Town") == 10


def test_429_with_retry_after_then_success(tmp_path, httpserver):
    url = f"{PREFIX}/Paris/monthly/2021030100/2022020100"
    httpserver.expect_ordered_request(url).respond_with_response(Response("slow down", status=429, headers={"Retry-After": "0"}))
    httpserver.expect_ordered_request(url).respond_with_json(_recorded("Paris", [("202103", 9)]))
    client = _client(tmp_path, httpserver)
    assert client.total_views("Paris") == 9 and client.requests_sent == 2


def test_persistent_errors_become_a_user_error(tmp_path, httpserver):
    httpserver.expect_request(f"{PREFIX}/Paris/monthly/2021030100/2022020100").respond_with_data("down", status=503)
    with pytest.raises(UserError, match="503 3 times"):
        _client(tmp_path, httpserver, max_attempts=3).total_views("Paris")


def test_registered_as_frequency_source(tmp_path, httpserver):
    httpserver.expect_request(f"{PREFIX}/Paris/monthly/2021030100/2022020100").respond_with_json(_recorded("Paris", [("202103", 5)]))
    httpserver.expect_request(f"{PREFIX}/Nowhere/monthly/2021030100/2022020100").respond_with_data("", status=404)
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path, seed=0, cache_dir=tmp_path / "cache")
    source = make_source("pageviews", {"base_url": httpserver.url_for("/api/rest_v1"), "min_interval_s": 0}, ctx)
    table = pl.LazyFrame({"subject": ["Paris", "Nowhere", "Paris"], "subject_id": [None, None, None]})
    out = source.frequency(table).collect()
    assert out["frequency"].to_list() == [5.0, None, 5.0]
    assert out["frequency_drop"].to_list() == [None, "pageviews_missing", None]
    assert source.details() == {"entities": 2, "titles_from_sitelinks": 0, "titles_from_labels": 2, "missing_articles": 1,
                                "missing_pageviews": "drop"}


# Wikidata's RDF for sitelinks: Q1 has an English article with its title, Q2 one whose title is only in
# the IRI, Q4 only a German article; Q3 has none.
SITELINKS = """\
<https://en.wikipedia.org/wiki/Douglas_Adams> <http://schema.org/about> <http://www.wikidata.org/entity/Q1> .
<https://en.wikipedia.org/wiki/Douglas_Adams> <http://schema.org/isPartOf> <https://en.wikipedia.org/> .
<https://en.wikipedia.org/wiki/Douglas_Adams> <http://schema.org/name> "Douglas Adams"@en .
<https://en.wikipedia.org/wiki/Bob_(musician)> <http://schema.org/about> <http://www.wikidata.org/entity/Q2> .
<https://en.wikipedia.org/wiki/Bob_(musician)> <http://schema.org/isPartOf> <https://en.wikipedia.org/> .
<https://de.wikipedia.org/wiki/Zett> <http://schema.org/about> <http://www.wikidata.org/entity/Q4> .
<https://de.wikipedia.org/wiki/Zett> <http://schema.org/isPartOf> <https://de.wikipedia.org/> .
<http://www.wikidata.org/entity/Q3> <http://www.w3.org/2000/01/rdf-schema#label> "Nowhere"@en .
"""
ENTITY_ROWS = [  # the labels are not the article titles: only the sitelinks give those
    {"id": "a", "subject_id": "Q1", "subject": "D. Adams"}, {"id": "b", "subject_id": "Q1", "subject": "D. Adams"},
    {"id": "c", "subject_id": "Q2", "subject": "Bob"}, {"id": "d", "subject_id": "Q3", "subject": "Nowhere"},
    {"id": "e", "subject_id": "Q4", "subject": "Zed"},
]


def test_titles_from_sitelinks_in_the_store_and_missing_articles_in_frequency_bin(tmp_path, httpserver):
    from kbench.construct.stages.frequency_bin import FrequencyBin

    for title, views in (("Douglas_Adams", 900), ("Bob_(musician)", 50), ("Zed", 7)):
        httpserver.expect_request(f"{PREFIX}/{title}/monthly/2021030100/2022020100").respond_with_json(
            _recorded(title, [("202103", views)]))
    httpserver.expect_request(f"{PREFIX}/Nowhere/monthly/2021030100/2022020100").respond_with_data("", status=404)
    (tmp_path / "wd.nt").write_text(SITELINKS, encoding="utf-8")
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "cache")
    options = {"base_url": httpserver.url_for("/api/rest_v1"), "min_interval_s": 0, "wikidata": {"store": "wd.nt"}}

    def build(missing="drop", **extra):
        stage = FrequencyBin(FrequencyBin.Params(source="pageviews", options={**options, **extra}, unit="entity",
                                                 percentages=[50, 0, 0, 0, 50], missing=missing), ctx)
        out = stage.run(pl.LazyFrame(ENTITY_ROWS))
        return out.kept.collect(), out.rejected.collect(), out.details, stage

    kept, rejected, details, stage = build()
    assert stage.input_files() == [tmp_path / "wd.nt"]
    assert dict(zip(kept["id"], kept["frequency"])) == {"a": 900.0, "b": 900.0, "c": 50.0, "e": 7.0}
    assert rejected.select("id", "reason").to_dicts() == [{"id": "d", "reason": "pageviews_missing"}]
    assert details["source"] == {"entities": 4, "titles_from_sitelinks": 2, "titles_from_labels": 2,
                                 "missing_articles": 1, "missing_pageviews": "drop"}
    assert details["units_ranked"] == 3  # the missing entity is not ranked
    requested = sorted(entry[0].path.split("/")[-4] for entry in httpserver.log)
    assert requested == ["Bob_(musician)", "Douglas_Adams", "Nowhere", "Zed"]  # never "D. Adams", never "Bob"

    _, rejected, _, _ = build(missing="keep")  # the stage keeps unknown frequencies, the source still drops 404s
    assert rejected["reason"].to_list() == ["pageviews_missing"]

    kept, rejected, details, _ = build(missing_pageviews="keep_as_zero")
    assert dict(zip(kept["id"], kept["frequency"]))["d"] == 0.0 and rejected.height == 0
    assert details["source"]["missing_articles"] == 1 and details["source"]["missing_pageviews"] == "keep_as_zero"


def test_a_build_against_another_sparql_endpoint_does_not_reuse_the_frequencies(tmp_path):
    from kbench.construct.stages.frequency_bin import FrequencyBin

    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path, seed=0, options={"sparql_endpoint": "http://wd.example/sparql"})
    with_sitelinks = FrequencyBin(FrequencyBin.Params(source="pageviews", options={"wikidata": {"store": "wd.nt"}}), ctx)
    assert with_sitelinks.run_options() == {"sparql_endpoint": "http://wd.example/sparql"}  # joins the resume key
    assert FrequencyBin(FrequencyBin.Params(source="pageviews"), ctx).run_options() == {}
