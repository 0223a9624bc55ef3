"""`ServedClient` against two real local HTTP servers (threads of this process): answers in input
order whatever the concurrency, requests spread over replicas, 429 + Retry-After honoured, bad
JSON retried, a refusal (4xx) not retried, and the last failure one clear line."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kbench.errors import UserError
from kbench.models.served.client import ServedClient


class Replica:
    """Answers POST /v1/completions with {"choices": [{"text": <the body's prompt>}]}; `script`
    gives the first answers' (status, body, headers) before that."""

    def __init__(self, script=()):
        self.script = list(script)
        self.hits = 0
        replica = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    replica.hits += 1
                    scripted = replica.script.pop(0) if replica.script else None
                status, data, headers = scripted or (200, json.dumps({"choices": [{"text": body["prompt"]}]}).encode(), {})
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def replicas():
    made = []
    yield lambda script=(): made.append(Replica(script)) or made[-1]
    for replica in made:
        replica.close()


def test_input_order_and_replicas(replicas):
    a, b = replicas(), replicas()
    client = ServedClient([a.url, b.url], None, concurrency=8)
    answers = client.post_many("/v1/completions", [{"prompt": f"p{i}"} for i in range(40)])
    assert [x["choices"][0]["text"] for x in answers] == [f"p{i}" for i in range(40)]
    assert a.hits == b.hits == 20
    client.close()


def test_retry_after_and_bad_json_are_retried(replicas):
    server = replicas([(429, b"{}", {"Retry-After": "2"}), (200, b'{"choices": [{"te', {}), (503, b"busy", {})])
    client = ServedClient([server.url], None, concurrency=1, retries=3)
    waits = []
    client.sleep = waits.append  # record the back-off instead of sleeping it
    assert client.post("/v1/completions", {"prompt": "x"})["choices"][0]["text"] == "x"
    assert waits == [2.0, 1.0, 2.0]  # the server's Retry-After, then exponential back-off
    client.close()


def test_refusal_is_not_retried_and_exhaustion_is_one_line(replicas):
    server = replicas([(400, b'{"detail": "prompt must be a string."}', {}), (404, b"{}", {})] + [(500, b"down", {})] * 3)
    client = ServedClient([server.url], "sk-secret-abc", concurrency=1, retries=2)
    client.sleep = lambda seconds: None
    with pytest.raises(UserError, match="refused /v1/completions: HTTP 400") as refused:
        client.post("/v1/completions", {"prompt": [1, 2]})
    assert server.hits == 1
    assert client.try_post("/tokenize", {"prompt": "x"}) is None and server.hits == 2  # the probe's "not offered"
    with pytest.raises(UserError, match=r"did not answer /v1/completions after 3 tries \(last: HTTP 500") as gone:
        client.post("/v1/completions", {"prompt": "x"})
    assert "sk-secret-abc" not in str(refused.value) + str(gone.value)
    client.close()
