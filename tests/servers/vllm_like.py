"""A stand-in for vLLM's OpenAI-compatible server, computing with a real transformers model.

    python -m tests.servers.vllm_like --port P --model-folder DIR [--served-name NAME] [--api-key-env VAR]
                                      [--chat-template FILE]

It speaks the shapes vLLM documents (docs "OpenAI-Compatible Server", "Extra Parameters"):
`GET /health`, `GET /v1/models` (id, root, max_model_len, created = start time), `POST /tokenize`,
and `POST /v1/completions` with a text or token-id prompt, `max_tokens`,
`temperature` (0 = greedy), `seed`, `stop` (not returned in the text), `echo`, `logprobs` (top-k per
position), `prompt_logprobs` ({"<id>": {"logprob", "rank", "decoded_token"}} per prompt position,
the prompt token always included, rank over the full vocabulary) and `return_tokens_as_token_ids`;
`POST /v1/chat/completions` with `messages`: the folder's chat template (or `--chat-template FILE`, as
vLLM's flag) applied with
add_generation_prompt and tokenised without special tokens (vLLM's defaults), then the same engine
(`max_tokens` or `max_completion_tokens`, `temperature`, `seed`, `stop`), answered as a
`chat.completion` (`choices[0].message.content`).
The same weights are also served as NAME-llamacpp, which acts like llama.cpp's server: `echo`
returns log-probs only for the generated tokens, `prompt_logprobs` and `return_tokens_as_token_ids`
are ignored, and `/tokenize` does not know it. NAME-chat is a chat-only server's model (as a hosted
chat API): `/v1/completions` answers 404 for it, and its chat endpoint refuses `max_tokens` (400) and
takes `max_completion_tokens`, as OpenAI's reasoning models do.
With `--api-key-env VAR` every request but `/health` must carry `Authorization: Bearer $VAR` (else 401).
Requests are computed one at a time (one model, 2 cores); the HTTP side is threaded. A list of prompts in one
request, or `logprobs` outside 0..20 (vLLM's default --max-logprobs), is answered 400: the probe then finds
neither prompt lists nor whole-vocabulary log-probs (the real vLLM's are tested in tests/slow/test_served_vllm.py).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Engine:
    def __init__(self, folder: str, name: str):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.name, self.folder = name, folder
        self.names = {name: "vllm", f"{name}-llamacpp": "llamacpp", f"{name}-chat": "chatonly"}
        self.max_len = int(getattr(self.model.config, "max_position_embeddings", 2048))
        self.created = int(time.time())
        self.lock = threading.Lock()

    def ids(self, prompt) -> list[int]:
        if isinstance(prompt, list):
            return [int(t) for t in prompt]
        return self.tokenizer(prompt, add_special_tokens=True)["input_ids"]

    def token_key(self, token: int, as_ids: bool) -> str:
        return f"token_id:{token}" if as_ids else self.tokenizer.decode([token])

    def logprobs_of(self, ids: list[int]):
        """log-softmax over the vocabulary at every position of `ids` [T, V] (float32)."""
        with self.torch.no_grad():
            logits = self.model(self.torch.tensor([ids])).logits[0].float()
        return self.torch.log_softmax(logits, dim=-1)

    def complete(self, body: dict) -> dict:
        with self.lock:
            return self._complete(body, self.names[body["model"]])

    def _complete(self, body: dict, mode: str) -> dict:
        torch = self.torch
        prompt_ids = self.ids(body["prompt"])
        max_tokens = int(body.get("max_tokens") or 16)
        temperature = float(body.get("temperature", 1.0))
        stops = body.get("stop") or []
        stops = [stops] if isinstance(stops, str) else stops
        k = body.get("logprobs")
        as_ids = bool(body.get("return_tokens_as_token_ids")) and mode == "vllm"
        generator = torch.Generator().manual_seed(int(body.get("seed") or 0))
        ids, generated, gen_logprobs, finish = list(prompt_ids), [], [], "length"
        text = ""
        for _ in range(max_tokens):
            scores = self.logprobs_of(ids)[-1]
            if temperature == 0:
                token = int(torch.argmax(scores))
            else:
                token = int(torch.multinomial(torch.softmax(scores / temperature, -1), 1, generator=generator))
            if token == self.tokenizer.eos_token_id:
                finish = "stop"
                break
            ids.append(token)
            generated.append(token)
            gen_logprobs.append(scores)
            text = self.tokenizer.decode(generated, skip_special_tokens=True)
            hit = [text.find(s) for s in stops if s and s in text]
            if hit:
                text, finish = text[: min(hit)], "stop"
                break
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish, "stop_reason": None}
        echo = bool(body.get("echo"))
        if echo:
            choice["text"] = self.tokenizer.decode(prompt_ids) + text
        if k is not None:
            positions = []  # (token, its logprob or None, scores it was drawn from or None)
            if echo and mode == "vllm":
                full = self.logprobs_of(prompt_ids)
                positions += [(t, None if i == 0 else full[i - 1]) for i, t in enumerate(prompt_ids)]
            positions += list(zip(generated, gen_logprobs))
            choice["logprobs"] = {
                "tokens": [self.token_key(t, as_ids) for t, _ in positions],
                "token_logprobs": [None if s is None else float(s[t]) for t, s in positions],
                "top_logprobs": [None if s is None else self._top(s, int(k), as_ids) for _, s in positions],
                "text_offset": list(range(len(positions))),
            }
        if body.get("prompt_logprobs") is not None and mode == "vllm":
            full = self.logprobs_of(prompt_ids)
            entries = [None]
            for i, t in enumerate(prompt_ids[1:], start=1):
                scores = full[i - 1]
                wanted = [t, *torch.topk(scores, int(body["prompt_logprobs"])).indices.tolist()]
                entries.append({str(w): self._entry(scores, w) for w in dict.fromkeys(wanted)})
            choice["prompt_logprobs"] = entries
        usage = {"prompt_tokens": len(prompt_ids), "completion_tokens": len(generated)}
        return {"id": "cmpl-standin", "object": "text_completion", "created": self.created, "model": body["model"],
                "choices": [choice], "usage": {**usage, "total_tokens": sum(usage.values())}}

    def chat(self, body: dict) -> dict:
        text = self.tokenizer.apply_chat_template(body["messages"], tokenize=False, add_generation_prompt=True)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        budget = body.get("max_completion_tokens", body.get("max_tokens"))
        params = {k: body[k] for k in ("model", "temperature", "seed", "stop") if k in body}
        with self.lock:
            done = self._complete({**params, "prompt": ids, "max_tokens": budget}, self.names[body["model"]])
        choice = done["choices"][0]
        message = {"role": "assistant", "reasoning_content": None, "content": choice["text"], "tool_calls": []}
        return {"id": "chatcmpl-standin", "object": "chat.completion", "created": self.created, "model": body["model"],
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": choice["finish_reason"],
                             "stop_reason": None}], "usage": done["usage"], "prompt_logprobs": None}

    def _top(self, scores, k: int, as_ids: bool) -> dict:
        values, indices = self.torch.topk(scores, k)
        return {self.token_key(int(i), as_ids): float(v) for v, i in zip(values, indices)}

    def _entry(self, scores, token: int) -> dict:
        value = scores[token]
        return {"logprob": float(value), "rank": int((scores > value).sum()) + 1,
                "decoded_token": self.tokenizer.decode([token])}


def serve(engine: Engine, port: int, api_key: str | None) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # one line per request: tests watch the log to kill the server mid-run
            print(self.requestline, flush=True)

        def _send(self, status: int, body: dict | None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorised(self) -> bool:
            if api_key and self.headers.get("Authorization") != f"Bearer {api_key}":
                self._send(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
                return False
            return True

        def do_GET(self):
            if self.path == "/health":  # open, as vLLM's
                return self._send(200, None)
            if not self._authorised():
                return
            if self.path == "/v1/models":
                models = [{"id": name, "object": "model", "created": engine.created, "owned_by": "vllm",
                           "root": engine.folder, "parent": None, "max_model_len": engine.max_len} for name in engine.names]
                return self._send(200, {"object": "list", "data": models})
            self._send(404, {"detail": "Not Found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self._authorised():
                return
            if self.path in ("/v1/completions", "/v1/chat/completions"):
                chat_only = engine.names.get(body.get("model")) == "chatonly"
                if body.get("model") not in engine.names or (chat_only and "chat" not in self.path):
                    return self._send(404, {"error": {"message": f"model {body.get('model')} does not exist"}})
                if chat_only and "max_tokens" in body:
                    return self._send(400, {"error": {"message": "Unsupported parameter: 'max_tokens'. Use "
                                                      "'max_completion_tokens' instead.", "type": "invalid_request_error"}})
                if "chat" not in self.path and (_many_prompts(body) or not 0 <= int(body.get("logprobs") or 0) <= 20):
                    # as vLLM under its default --max-logprobs 20; one prompt a request (the stand-in's simplification)
                    return self._send(400, {"error": {"message": "one prompt a request, logprobs 0..20", "type": "BadRequestError"}})
                if self.path == "/v1/chat/completions" and not engine.tokenizer.chat_template:
                    return self._send(400, {"error": {"message": "the model has no chat template", "type": "BadRequestError"}})
                return self._send(200, engine.chat(body) if "chat" in self.path else engine.complete(body))
            vllm = engine.names.get(body.get("model")) == "vllm"
            if self.path == "/tokenize" and vllm:
                tokens = engine.tokenizer(body["prompt"], add_special_tokens=body.get("add_special_tokens", True))["input_ids"]
                return self._send(200, {"count": len(tokens), "max_model_len": engine.max_len, "tokens": tokens,
                                        "token_strs": None})
            self._send(404, {"detail": "Not Found"})

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


def _many_prompts(body: dict) -> bool:
    prompt = body.get("prompt")
    return isinstance(prompt, list) and any(isinstance(p, (list, str)) for p in prompt)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model-folder", required=True)
    parser.add_argument("--served-name", default=None)
    parser.add_argument("--api-key-env", default=None)
    parser.add_argument("--chat-template", default=None)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    engine = Engine(args.model_folder, args.served_name or args.model_folder)
    if args.chat_template:
        engine.tokenizer.chat_template = open(args.chat_template, encoding="utf-8").read()
    serve(engine, args.port, os.environ.get(args.api_key_env) if args.api_key_env else None)


if __name__ == "__main__":
    main()
