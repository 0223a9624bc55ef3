"""Real local SPARQL servers for tests: `oxigraph serve-read-only`, and a fault-injecting proxy before it;
with what they serve and what queries them: a store made from the LAMA inputs as a user makes one
(`make_lama_store`), and a build recipe that checks LAMA facts against a store (`lama_check_recipe`).

    subset, store = make_lama_store(work, ["--lama-dir", str(shared_data)])
    with oxigraph_server(store) as url:                      # http://127.0.0.1:PORT/query
        with FaultProxy(url, ["503", "pass", "cut"]) as proxy:
            ...                                             # proxy.url answers by the script

The proxy takes one script entry per request; when the script is used up, every request passes
through. Entries: "pass", "429" (with `Retry-After: 0`), "500", "502", "503", "hang" (answer
after `hang_seconds`, past the client's timeout), "cut" (promise the full body, send half, close),
"truncated" (HTTP 200 with half of the real body), "html" (HTTP 200 with an HTML error page).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from tests.conftest import run_kbench
from tests.launchers import free_port
from tests.servers import stop


def oxigraph_binary() -> str:
    found = shutil.which("oxigraph") or str(Path(sys.executable).with_name("oxigraph"))
    if not Path(found).exists():
        pytest.fail("the `oxigraph` server binary is missing: pip install 'kbench[test]' (PyPI package oxigraph)")
    return found


@contextmanager
def oxigraph_server(store_dir: Path):
    """Serve `store_dir` read-only on 127.0.0.1; stopped by its pid on exit."""
    port = free_port()
    proc = subprocess.Popen([oxigraph_binary(), "serve-read-only", "--location", str(store_dir),
                             "--bind", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/query"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if requests.get(url, params={"query": "ASK {}"}, timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"oxigraph did not start: {proc.stderr.read().decode(errors='replace')[-500:]}")
            time.sleep(0.1)
        yield url
    finally:
        stop(proc)


def make_lama_store(work: Path, subset_args: list[str], extra_nt: str = "") -> tuple[Path, Path]:
    """(subset .nt, store folder) in `work`, made with the real CLI: `kbench wikidata subset SUBSET_ARGS`, then
    `kbench wikidata import` of the subset (and of the N-Triples `extra_nt`, where given)."""
    subset, store = work / "lama.nt", work / "store"
    done = run_kbench("wikidata", "subset", *subset_args, "--out", str(subset))
    assert done.returncode == 0, done.stderr
    imports = [subset]
    if extra_nt:
        imports.append(work / "extra.nt")
        imports[-1].write_text(extra_nt, encoding="utf-8")
    for rdf in imports:
        done = run_kbench("wikidata", "import", str(rdf), "--store", str(store))
        assert done.returncode == 0, done.stderr
    return subset, store


def lama_check_recipe(path: Path, shared_data: Path, relations: list[str], max_per_relation: int, wikidata: str,
                      stage_ids: bool = False) -> Path:
    """A recipe at `path` that loads LAMA T-REx facts, then checks them against a store with verify_wikidata and
    single_answer, both given the TOML lines `wikidata` (`store = ...`, the http_* settings); with `stage_ids`
    those two stages are named "verify" and "single"."""
    verify, single = ('id = "verify"\n', 'id = "single"\n') if stage_ids else ("", "")
    path.write_text(f"""
[pipeline]
name = "mini"

[[stages]]
stage = "load_lama"
trex = "{(shared_data / 'lama_trex').as_posix()}"
relations = {json.dumps(relations)}
max_per_relation = {max_per_relation}

[[stages]]
stage = "verify_wikidata"
{verify}{wikidata}

[[stages]]
stage = "single_answer"
{single}{wikidata}
""", encoding="utf-8")
    return path


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # a client that gave up on a "hang" is expected
        pass


class FaultProxy:
    def __init__(self, upstream: str, script: list[str], hang_seconds: float = 1.5):
        self.upstream = upstream
        self.script = list(script)
        self.hang_seconds = hang_seconds
        self.requests_seen = 0
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/query"

    def _next_action(self) -> str:
        with self._lock:
            self.requests_seen += 1
            return self.script.pop(0) if self.script else "pass"

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, status: int, body: bytes, content_type: str, headers: dict | None = None,
                      length: int | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body) if length is None else length))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                action = proxy._next_action()
                if action in ("429", "500", "502", "503"):
                    headers = {"Retry-After": "0"} if action == "429" else {}
                    return self._send(int(action), b"injected fault", "text/plain", headers)
                if action == "html":
                    return self._send(200, b"<html><body>Service Unavailable</body></html>", "text/html")
                upstream = requests.post(proxy.upstream, data=body, timeout=30, headers={
                    "Content-Type": self.headers["Content-Type"], "Accept": self.headers.get("Accept", "*/*")})
                content_type = upstream.headers.get("Content-Type", "application/octet-stream")
                if action == "hang":
                    time.sleep(proxy.hang_seconds)
                elif action == "truncated":
                    return self._send(200, upstream.content[: len(upstream.content) // 2], content_type)
                elif action == "cut":
                    self._send(200, upstream.content[: len(upstream.content) // 2], content_type,
                               length=len(upstream.content))
                    self.close_connection = True
                    return
                elif action != "pass":
                    raise ValueError(f"unknown fault {action!r}")
                return self._send(upstream.status_code, upstream.content, content_type)

        return Handler

    def __enter__(self) -> FaultProxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._server.shutdown()
        self._server.server_close()
