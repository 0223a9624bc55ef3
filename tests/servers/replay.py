"""A server that answers recorded exchanges (tests/fixtures/served/*_exchanges.json, written by
scripts/record_llamacpp_bodies.py from a real server): each request whose method, path and JSON body
equal a recorded one gets that recording's status and answer; any other request gets 404 and is
kept in `unmatched`, so a test sees when the code asks something the recording never saw; `asked`
counts every request.

    with Replay(exchanges) as replay:
        client = ServedClient([replay.url], None)
        ...
    assert not replay.unmatched

Runs in-test on 127.0.0.1 at a free port, in a thread, and is shut down on leaving the block.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _key(method: str, path: str, body) -> str:
    return json.dumps([method, path, body], sort_keys=True)


class Replay:
    def __init__(self, exchanges: list[dict]):
        self.answers = {_key(e["method"], e["path"], e.get("body")): (e["status"], e["answer"]) for e in exchanges}
        self.unmatched: list[tuple[str, str, object]] = []
        self.asked = 0
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._answer("GET", None)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self._answer("POST", json.loads(self.rfile.read(length) or b"null"))

            def _answer(self, method, body):
                replay.asked += 1
                found = replay.answers.get(_key(method, self.path, body))
                if found is None:
                    replay.unmatched.append((method, self.path, body))
                    found = (404, {"error": {"message": "not in the recording", "code": 404}})
                payload = json.dumps(found[1]).encode()
                self.send_response(found[0])
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *_args):  # quiet: a test reads `unmatched`, not the log
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Replay:
        self.thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
