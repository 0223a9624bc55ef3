"""The HTTP transport against a local HTTP server: retries, Retry-After, bounded attempts, headers."""

from __future__ import annotations

import json
import time

import pytest
from werkzeug import Request, Response

from kbench import __version__
from kbench.errors import UserError
from kbench.sources.sparql_cache import QueryCache
from kbench.sources.sparql_client import HttpTransport, SparqlClient, retry_after_seconds
from kbench.sources.wikidata import ENTITY, WikidataClient, entities_query

RESULT = {"head": {"vars": ["item", "label"]},
          "results": {"bindings": [{"item": {"type": "uri", "value": f"{ENTITY}Q1"},
                                    "label": {"type": "literal", "value": "one", "xml:lang": "en"}}]}}


def _client(httpserver, waits: list[float], **kwargs) -> SparqlClient:
    transport = HttpTransport(httpserver.url_for("/sparql"), sleep=waits.append, backoff=0.25, **kwargs)
    return SparqlClient(transport)


def test_request_shape_user_agent_and_json_results(httpserver, monkeypatch):
    monkeypatch.setenv("KBENCH_CONTACT", "ops@example.org")
    seen: list[Request] = []

    def handler(request: Request) -> Response:
        seen.append(request)
        return Response(json.dumps(RESULT), content_type="application/sparql-results+json")

    httpserver.expect_request("/sparql", method="POST").respond_with_handler(handler)
    assert WikidataClient(_client(httpserver, [])).entities(["Q1", "Q2"]) == {"Q1": "one"}
    (request,) = seen
    assert request.headers["User-Agent"].startswith(f"kbench/{__version__} (")
    assert "https://" in request.headers["User-Agent"] and "contact: ops@example.org)" in request.headers["User-Agent"]
    assert request.headers["Accept"] == "application/sparql-results+json"
    assert request.form["query"] == entities_query(["Q1", "Q2"])
    assert "SERVICE" not in request.form["query"]


def test_429_with_retry_after_then_success(httpserver):
    httpserver.expect_ordered_request("/sparql").respond_with_response(
        Response("slow down", status=429, headers={"Retry-After": "3"}))
    httpserver.expect_ordered_request("/sparql").respond_with_response(
        Response("busy", status=503, headers={"Retry-After": "1"}))
    httpserver.expect_ordered_request("/sparql").respond_with_json(RESULT)
    waits: list[float] = []
    client = _client(httpserver, waits)
    assert client.select("SELECT * WHERE { ?s ?p ?o }") == [{"item": f"{ENTITY}Q1", "label": "one"}]
    assert waits == [3.0, 1.0]  # the server's Retry-After, not our backoff
    assert client.stats.queries_sent == 1 and client.stats.retries == 2


def test_retry_after_is_really_waited(httpserver):
    httpserver.expect_ordered_request("/sparql").respond_with_response(
        Response("", status=429, headers={"Retry-After": "1"}))
    httpserver.expect_ordered_request("/sparql").respond_with_json(RESULT)
    started = time.monotonic()
    SparqlClient(HttpTransport(httpserver.url_for("/sparql"))).select("SELECT * WHERE { ?s ?p ?o }")
    assert time.monotonic() - started >= 0.95


def test_503_every_time_gives_a_clear_error_after_bounded_attempts(httpserver, tmp_path):
    calls = []
    httpserver.expect_request("/sparql").respond_with_handler(
        lambda request: calls.append(1) or Response("down", status=503))
    waits: list[float] = []
    client = SparqlClient(HttpTransport(httpserver.url_for("/sparql"), sleep=waits.append, backoff=0.25,
                                        max_attempts=4), QueryCache(tmp_path))
    with pytest.raises(UserError, match=r"failed 4 times in a row \(last: HTTP 503\)"):
        client.select("SELECT * WHERE { ?s ?p ?o }")
    assert len(calls) == 4
    assert waits == [0.25, 0.5, 1.0]  # exponential backoff without Retry-After
    assert not list(tmp_path.rglob("*.json"))  # nothing cached from a failure


@pytest.mark.parametrize("body", ['{"head": {"vars": []}, "results": {"bind', "<html>oops</html>", '{"results": 3}'])
def test_invalid_body_under_200_is_retried(httpserver, body):
    httpserver.expect_ordered_request("/sparql").respond_with_data(body, content_type="application/json")
    httpserver.expect_ordered_request("/sparql").respond_with_json(RESULT)
    waits: list[float] = []
    assert _client(httpserver, waits).select("SELECT * {}") == [{"item": f"{ENTITY}Q1", "label": "one"}]
    assert len(waits) == 1


def test_timeout_is_retried(httpserver):
    # The server answers one request at a time, so the retry's answer waits for the slow one:
    # it comes ~0.2 s into the retry, well inside the retry's 0.5 s timeout.
    def slow(request):
        time.sleep(0.7)
        return Response("{}", content_type="application/json")

    httpserver.expect_ordered_request("/sparql").respond_with_handler(slow)
    httpserver.expect_ordered_request("/sparql").respond_with_json(RESULT)
    waits: list[float] = []
    assert _client(httpserver, waits, timeout=0.5).select("SELECT * {}")[0]["label"] == "one"
    assert len(waits) == 1


def test_client_error_fails_at_once(httpserver):
    httpserver.expect_request("/sparql").respond_with_data("Parse error: bad query", status=400)
    waits: list[float] = []
    with pytest.raises(UserError, match="HTTP 400: Parse error"):
        _client(httpserver, waits).select("SELECT nonsense")
    assert waits == []


def test_unreachable_endpoint_and_bad_url():
    waits: list[float] = []
    transport = HttpTransport("http://127.0.0.1:9/sparql", sleep=waits.append, max_attempts=2, timeout=2)
    with pytest.raises(UserError, match="failed 2 times"):
        SparqlClient(transport).select("SELECT * {}")
    with pytest.raises(UserError, match="http"):
        HttpTransport("file:///etc/passwd")


def test_retry_after_parsing():
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == 10.0
