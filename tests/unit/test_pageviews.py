"""The pageviews client against a local HTTP server with recorded Wikimedia responses."""

from __future__ import annotations

import polars as pl
import pytest
from werkzeug import Response

from kbench.build.context import StageContext
from kbench.errors import UserError
from kbench.sources.frequency import make_source
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


def test_missing_article_is_zero_and_titles_are_escaped(tmp_path, httpserver):
    # the server decodes the path for matching; the raw request line shows the slash was escaped
    httpserver.expect_request(f"{PREFIX}/AC/DC/monthly/2021030100/2022020100").respond_with_json(
        {"type": "https://mediawiki.org/wiki/HyperSwitch/errors/not_found", "title": "Not found."}, status=404)
    assert _client(tmp_path, httpserver).total_views("AC/DC") == 0
    environ = httpserver.log[0][0].environ
    assert "/AC%2FDC/" in environ.get("REQUEST_URI", environ.get("RAW_URI", ""))


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
    table = pl.LazyFrame({"subject": ["Paris", "Nowhere", "Paris"]})
    assert source.frequency(table).collect()["frequency"].to_list() == [5.0, 0.0, 5.0]
