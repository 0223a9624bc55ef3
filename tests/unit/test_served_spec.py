"""`--model openai:URL;key=value`: parsing, errors as one line, and credentials kept out of every
record (URLs without user:password@ or query strings; the key only from the environment)."""

from __future__ import annotations

import pytest

from kbench.errors import UserError
from kbench.models.served.client import ServedClient, _join, _retry_after
from kbench.models.served.spec import ServedSpec, api_key, backend_for, redact_url


def test_one_server_with_defaults():
    spec = ServedSpec.from_arg("openai:http://127.0.0.1:8000")
    assert spec.urls == ("http://127.0.0.1:8000/v1",) and spec.model is None and spec.revision == ""
    assert (spec.concurrency, spec.timeout, spec.retries) == (4, 120.0, 5)


def test_replicas_and_options():
    spec = ServedSpec.from_arg("openai:http://gpu1:8000/v1,https://gpu2/v1/;model=org/model-8b;revision=2024-07;"
                               "tokenizer=/tok;concurrency=16;timeout=30;retries=0")
    assert spec.urls == ("http://gpu1:8000/v1", "https://gpu2/v1")
    assert (spec.model, spec.revision, spec.tokenizer) == ("org/model-8b", "2024-07", "/tok")
    assert (spec.concurrency, spec.timeout, spec.retries) == (16, 30.0, 0)
    assert backend_for("openai:http://x") == "openai" and backend_for("smollm2-135m") == "hf"


@pytest.mark.parametrize("arg, message", [
    ("openai:", "no server URL"),
    ("openai:ftp://host", r"not an http\(s\) URL"),
    ("openai:http://h;modle=x", "unknown served-model option 'modle'"),
    ("openai:http://h;concurrency=0", "concurrency must be >= 1"),
    ("openai:http://h;timeout=soon", "timeout='soon' is not a number"),
])
def test_bad_arguments_are_one_line_user_errors(arg, message):
    with pytest.raises(UserError, match=message):
        ServedSpec.from_arg(arg)


def test_credentials_never_recorded(monkeypatch):
    secret_url = "https://alice:hunter2@api.example.com:8443/v1?api-key=sk-in-query"
    assert redact_url(secret_url) == "https://api.example.com:8443/v1"
    spec = ServedSpec.from_arg(f"openai:{secret_url}")
    assert "hunter2" not in str(spec.describe()) and "sk-in-query" not in str(spec.describe())
    with pytest.raises(UserError) as error:
        ServedSpec.from_arg("openai:ftp://bob:pw123@host/?token=sk-x")
    assert "pw123" not in str(error.value) and "sk-x" not in str(error.value)
    monkeypatch.setenv("KBENCH_API_KEY", "")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    assert api_key() == "sk-openai"
    monkeypatch.setenv("KBENCH_API_KEY", "sk-kbench")
    assert api_key() == "sk-kbench"
    client = ServedClient(spec.urls, api_key(), concurrency=2)
    assert "sk-kbench" not in repr(client) and "hunter2" not in repr(client)
    client.close()


def test_paths_and_retry_after():
    assert _join("http://h:8000/v1", "/v1/completions") == "http://h:8000/v1/completions"
    assert _join("http://h:8000/v1", "/tokenize") == "http://h:8000/tokenize"  # vLLM's, beside the API
    assert _join("https://h/openai/v1?api-version=2", "/v1/models") == "https://h/openai/v1/models?api-version=2"
    assert _retry_after("2") == 2.0 and _retry_after("999") == 30.0 and _retry_after("Wed, 21 Oct 2015") is None


def test_a_model_without_tokenizer_refuses_what_needs_tokens():
    from kbench.models.served.tokenizer import NoTokenizer

    tokenizer = NoTokenizer("org/m")
    assert not tokenizer and tokenizer.chat_template is None
    with pytest.raises(UserError, match="'org/m' has no tokenizer .*;tokenizer=FOLDER"):
        tokenizer(" Paris", add_special_tokens=False)


def test_a_spec_repr_and_a_server_error_body_hide_the_credentials():
    from tests.unit.test_served_client import Replica

    spec = ServedSpec.from_arg("openai:https://alice:hunter2@api.example.com/v1?api-key=sk-in-query;model=m")
    assert repr(spec) == "ServedSpec(urls=['https://api.example.com/v1'], model='m', revision='', tokenizer=None, api='completions')"
    key = "sk-live-" + "x" * 300  # longer than the 200 characters of the body kept: no piece of it either
    server = Replica([(401, f'{{"error": "bad key Bearer {key}"}}'.encode(), {})])
    client = ServedClient([server.url], key, concurrency=1, retries=0)
    try:
        with pytest.raises(UserError, match="HTTP 401") as refused:
            client.post("/v1/completions", {"prompt": "x"})
    finally:
        client.close()
        server.close()
    assert "sk-live" not in str(refused.value) and "Bearer <api key>" in str(refused.value)
