"""The server's /tokenize as the served model's tokenizer, against a local HTTP server: one request
per text, in input order; from MANY_TEXTS texts on, a warning names the faster local tokenizer
(LAMA's common vocabulary is ~21k requests, about 25 s against vLLM on 2 CPU cores)."""

from __future__ import annotations

import json
import logging

from werkzeug import Response

from kbench.models.served import tokenizer
from kbench.models.served.client import ServedClient
from kbench.models.served.tokenizer import ServerTokenizer


def tokenize_by_characters(request) -> Response:
    """vLLM's /tokenize dialect: one token id per character, a BOS (1) when special tokens are asked."""
    body = json.loads(request.data)
    ids = [1] * bool(body["add_special_tokens"]) + [ord(c) for c in body["prompt"]]
    return Response(json.dumps({"tokens": ids}), content_type="application/json")


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == tokenizer.__name__]


def test_many_texts_through_the_server_warn_and_keep_their_order(httpserver, monkeypatch, caplog):
    httpserver.expect_request("/tokenize", method="POST").respond_with_handler(tokenize_by_characters)
    served = ServerTokenizer(ServedClient([httpserver.url_for("")], None, concurrency=4), "smollm2")
    assert served.bos_token_id == 1
    with caplog.at_level(logging.WARNING, logger=tokenizer.__name__):
        assert served(["ab", "c"], add_special_tokens=False)["input_ids"] == [[97, 98], [99]]
        assert not warnings(caplog)  # a handful of texts: nothing to say
        monkeypatch.setattr(tokenizer, "MANY_TEXTS", 3)
        words = ["x", "yz", "w", "v"]
        assert served(words, add_special_tokens=False)["input_ids"] == [[ord(c) for c in w] for w in words]
    (message,) = warnings(caplog)
    assert "tokenising 4 texts through the server's /tokenize" in message and ";tokenizer=FOLDER" in message
