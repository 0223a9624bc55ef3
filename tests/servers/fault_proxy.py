"""An HTTP proxy in front of a model server that injects faults on a fixed schedule.

    python -m tests.servers.fault_proxy --port P --upstream U --faults 429,500,timeout,reset,truncated --every 3
                                        [--fail-after N]

Request n (counted from 1, `/health` not counted) is forwarded to 127.0.0.1:U unless n is a
multiple of `--every`; then it gets the next fault of `--faults`, in turn:
  429        status 429 with `Retry-After: 1`
  500        status 500
  timeout    no answer for 6 s, then the connection is closed (longer than the tests' client time-out)
  reset      the connection closed at once without an answer (TCP reset)
  truncated  the upstream's answer cut to half its bytes, as a 200 with a matching Content-Length
With `--fail-after N` every request after the N-th answers 503 (a server that went away), so a
run stops and a rerun through a healthy server resumes. `--rewrite` changes every forwarded request
body (a server that ignores a parameter, for `kbench check`):
  drop-echo  `echo` removed (llama.cpp's server ignores it: no prompt text, no prompt log-probs)
  sampling   `temperature` 1 and a fresh random `seed` where greedy was asked (a backend that samples anyway)
  flip-logprobs  every answer's log-probs with their sign flipped (a server whose log-probs contradict its answers) The schedule depends only on the request
count, so a run with the same requests meets the same faults.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", type=int, required=True)
    parser.add_argument("--faults", default="429,500,timeout,reset,truncated")
    parser.add_argument("--every", type=int, default=3)
    parser.add_argument("--fail-after", type=int, default=None)
    parser.add_argument("--rewrite", choices=["drop-echo", "sampling", "flip-logprobs"], default=None)
    args = parser.parse_args()
    faults = itertools.cycle([f for f in args.faults.split(",") if f])
    counter = itertools.count(1)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _reply(self, status: int, data: bytes, headers: dict | None = None) -> None:
            self.send_response(status)
            for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _forward(self, method: str, body: bytes | None) -> tuple[int, bytes]:
            headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
            request = urllib.request.Request(f"http://127.0.0.1:{args.upstream}{self.path}", data=body, method=method,
                                             headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=600) as answer:
                    return answer.status, answer.read()
            except urllib.error.HTTPError as error:
                return error.code, error.read()

        def _handle(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if self.path == "/health":
                return self._reply(*self._forward(method, body))
            if args.rewrite in ("drop-echo", "sampling") and body:
                body = rewrite(body, args.rewrite)
            with lock:
                n = next(counter)
                fault = next(faults) if n % args.every == 0 else None
            if args.fail_after is not None and n > args.fail_after:
                return self._reply(503, b'{"error": "server gone"}')
            if fault == "429":
                return self._reply(429, b'{"error": "rate limited"}', {"Retry-After": "1"})
            if fault == "500":
                return self._reply(500, b'{"error": "internal"}')
            if fault == "timeout":
                time.sleep(6)
                self.close_connection = True
                return
            if fault == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True
                return
            status, data = self._forward(method, body)
            if fault == "truncated":
                data = data[: len(data) // 2]
            if args.rewrite == "flip-logprobs" and status == 200:
                data = json.dumps(flip_logprobs(json.loads(data))).encode()
            self._reply(status, data)

        def do_GET(self):
            self._handle("GET")

        def do_POST(self):
            self._handle("POST")

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


def rewrite(body: bytes, how: str) -> bytes:
    request = json.loads(body)
    if how == "drop-echo":
        request.pop("echo", None)
    elif request.get("temperature", 1) == 0:  # sampling
        request["temperature"] = 1.0
        request["seed"] = random.randrange(2**31)  # unseeded on purpose: the fault is non-determinism
    return json.dumps(request).encode()


def flip_logprobs(value, key: str | None = None):
    """`value` with every number under a "logprob" key or in a "token_logprobs" list negated."""
    if isinstance(value, dict):
        return {k: flip_logprobs(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [flip_logprobs(v, key) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool) and key in ("logprob", "token_logprobs"):
        return -value
    return value


if __name__ == "__main__":
    main()
