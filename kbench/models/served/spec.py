"""`--model openai:URL[,URL...][;key=value...]`: a model behind OpenAI-compatible servers.

    openai:http://127.0.0.1:8000/v1
    openai:http://gpu1:8000/v1,http://gpu2:8000/v1;model=meta-llama/Llama-3.1-8B;revision=2024-07-23
    openai:https://api.example.com/v1;model=my-model;tokenizer=/models/llama3-tokenizer;concurrency=16
    openai:https://api.example.com/v1;model=my-chat-model;api=chat

URLs are the servers' API roots (`/v1` is added when missing); several spread the requests
(replicas of the same weights). Keys: `model` (the served model id; default: the only one
`/v1/models` lists), `revision` (your tag for the weights: bump it when they change under the same
name), `tokenizer` (a local tokenizer folder; default: the server's `/tokenize`), `concurrency`
(requests in flight, default 4), `timeout` (seconds per request, default 120), `retries` (default 5),
`api` (`completions`, the default: `/v1/completions`; `chat`: `/v1/chat/completions`, where the
server applies its own chat template: takes the chat prompt form, `--prompt chat`; generation only).
The API key is read from `$KBENCH_API_KEY` (else `$OPENAI_API_KEY`), never from the argument, and
is never printed or stored; URLs are recorded without user:password@ and without query strings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from kbench.errors import UserError

PREFIX = "openai:"
API_KEY_VARIABLES = ("KBENCH_API_KEY", "OPENAI_API_KEY")
_INT_KEYS = {"concurrency": 4, "retries": 5}
APIS = ("completions", "chat")
_KEYS = {"model", "revision", "tokenizer", "timeout", "api", *_INT_KEYS}


def is_served(model_arg: str) -> bool:
    return model_arg.startswith(PREFIX)


def backend_for(model_arg: str) -> str:
    """The BACKENDS name a `--model` argument selects: `openai:` a server, `vllm:` vLLM in this process."""
    if is_served(model_arg):
        return "openai"
    return "vllm" if model_arg.startswith("vllm:") else "hf"


@dataclass(frozen=True)
class ServedSpec:
    urls: tuple[str, ...] = field(repr=False)  # may hold user:password@ or ?token=: see __repr__
    model: str | None = None
    revision: str = ""
    tokenizer: str | None = None
    concurrency: int = 4
    timeout: float = 120.0
    retries: int = 5
    api: str = "completions"

    @classmethod
    def from_arg(cls, arg: str) -> ServedSpec:
        if not is_served(arg):
            raise UserError(f"--model {redact_url(arg)!r}: a served model starts with {PREFIX!r}")
        head, *pairs = arg[len(PREFIX) :].split(";")
        urls = tuple(_api_root(url.strip()) for url in head.split(",") if url.strip())
        if not urls:
            raise UserError(f"--model: no server URL after {PREFIX!r} (e.g. {PREFIX}http://127.0.0.1:8000/v1)")
        values: dict = {}
        for pair in (p for p in pairs if p.strip()):
            key, sep, value = pair.partition("=")
            key = key.strip()
            if not sep or key not in _KEYS:
                raise UserError(f"--model: unknown served-model option {key!r}; known: {', '.join(sorted(_KEYS))}")
            values[key] = value.strip()
        for key in _INT_KEYS:
            if key in values:
                values[key] = _number(key, values[key], int, 0 if key == "retries" else 1)
        if "timeout" in values:
            values["timeout"] = _number("timeout", values["timeout"], float, 0.001)
        if values.get("api", APIS[0]) not in APIS:
            raise UserError(f"--model: served-model option api={values['api']!r}; choose {' or '.join(APIS)}")
        return cls(urls=urls, **values)

    def __repr__(self) -> str:  # logs and tracebacks show a spec: never its credentials
        urls = [redact_url(u) for u in self.urls]
        options = f"model={self.model!r}, revision={self.revision!r}, tokenizer={self.tokenizer!r}, api={self.api!r}"
        return f"ServedSpec(urls={urls}, {options})"

    def describe(self) -> dict:
        """What results record: credential-free URLs and the options that shape requests."""
        return {"urls": [redact_url(u) for u in self.urls], "model": self.model, "revision": self.revision, "api": self.api}


def _number(key: str, text: str, kind, minimum):
    try:
        value = kind(text)
    except ValueError:
        raise UserError(f"--model: served-model option {key}={text!r} is not a number") from None
    if value < minimum:
        raise UserError(f"--model: served-model option {key} must be >= {minimum}, got {text}")
    return value


def _api_root(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"--model: {redact_url(url)!r} is not an http(s) URL")
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def redact_url(url: str) -> str:
    """`url` without user:password@ and without a query string (where tokens travel)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable url>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def api_key() -> str | None:
    for name in API_KEY_VARIABLES:
        if os.environ.get(name):
            return os.environ[name]
    return None
