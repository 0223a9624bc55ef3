"""Record the answers of a running llama.cpp server for the served-model tests (tests/fixtures/served/).

    llama-server -m SmolLM2-135M-Instruct.Q4_1.gguf --host 127.0.0.1 --port 8080 -t 1 -c 4096 -np 4 \\
        --alias smollm2 --no-webui &
    python scripts/record_llamacpp_bodies.py --server http://127.0.0.1:8080

Everything goes through a recording proxy on 127.0.0.1: kbench's served backend opening the model
(`/v1/models`, `/tokenize` in both dialects, the probe) and answering a few model calls (`generate`,
`rank_first_token`, with the server's tokenizer), then a few requests of our own. It writes
- `llamacpp_exchanges.json`: {"server", "model", "recorded", "exchanges": [{method, path, body,
  status, answer}]}, what tests/servers/replay.py answers from;
- `llamacpp_<name>.json`: single answers the parser tests read (see `NAMED`).
Rerun it when the probe's requests change (a replay test then reports requests it never saw).
"""

from __future__ import annotations

import argparse
import datetime
import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROMPTS = ["The capital of France is", "The capital of Germany is", "Dante was born in", "Toyota is a company from"]
GOLDS = [" Paris", " Berlin", " Florence", " Japan"]


def named_requests(ids: list[int]) -> dict[str, tuple[str, dict]]:
    """The single answers the parser tests read: name -> (path, body)."""
    base = {"model": "smollm2", "prompt": ids, "temperature": 0}
    return {
        "completion_echo": ("/v1/completions", {**base, "max_tokens": 1, "echo": True, "logprobs": 1}),
        "completion_top5": ("/v1/completions", {**base, "max_tokens": 3, "logprobs": 5}),
        "completion_max_tokens_0": ("/v1/completions", {**base, "max_tokens": 0}),
        "completion_prompt_logprobs": ("/v1/completions", {**base, "max_tokens": 1, "prompt_logprobs": 1}),
        # the probe's second top-k request, which it sends only when 20 are not delivered (a test cuts the lists)
        "completion_probe_top5": (
            "/v1/completions",
            {**base, "max_tokens": 1, "logprobs": 5, "return_tokens_as_token_ids": True},
        ),
    }


class RecordingProxy:
    """Forwards each request to `upstream` and keeps (method, path, body, status, answer)."""

    def __init__(self, upstream: str):
        self.exchanges: list[dict] = []
        lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._forward("GET", None)

            def do_POST(self):
                self._forward("POST", json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0))))

            def _forward(self, method, body):
                data = None if body is None else json.dumps(body).encode()
                request = urllib.request.Request(upstream + self.path, data=data, method=method,
                                                 headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=300) as answer:
                        status, raw = answer.status, answer.read()
                except urllib.error.HTTPError as error:
                    status, raw = error.code, error.read()
                with lock:
                    proxy.exchanges.append({"method": method, "path": self.path, "body": body, "status": status,
                                            "answer": json.loads(raw)})
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *_args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as answer:
        return json.loads(answer.read())


def main() -> None:
    from kbench.models.cached import open_model
    from kbench.models.interface import ModelSpec

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the llama.cpp server's root, e.g. http://127.0.0.1:8080")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "tests/fixtures/served")
    args = parser.parse_args()
    upstream = args.server.rstrip("/").removesuffix("/v1")
    proxy = RecordingProxy(upstream)
    served = open_model(ModelSpec(name=f"openai:{proxy.url}/v1", backend="openai", use_cache=False))
    served.generate(PROMPTS, 8, stop=["\n"])
    served.rank_first_token(PROMPTS, GOLDS)
    ids = served.inner.tokens(PROMPTS[0])["input_ids"]  # with special tokens, as the backend sends them
    for name, (path, body) in named_requests(ids).items():
        answer = post(proxy.url + path, body)
        (args.out / f"llamacpp_{name}.json").write_text(json.dumps(answer, indent=1) + "\n")
    props = json.loads(urllib.request.urlopen(upstream + "/props", timeout=30).read())
    record = {"server": f"llama.cpp server, build {props.get('build_info')}", "model": props.get("model_path", "").split("/")[-1],
              "recorded": datetime.date.today().isoformat(), "exchanges": proxy.exchanges}
    (args.out / "llamacpp_exchanges.json").write_text(json.dumps(record, indent=1) + "\n")
    proxy.server.shutdown()
    print(f"{len(proxy.exchanges)} exchanges and {len(named_requests(ids))} named answers in {args.out}")


if __name__ == "__main__":
    main()
