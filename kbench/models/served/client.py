"""HTTP to OpenAI-compatible servers: a bound on requests in flight, retries, replicas.

    client = ServedClient(spec.urls, api_key(), concurrency=8, timeout=120, retries=5)
    client.get("/v1/models")                                -> parsed JSON
    client.post_many("/v1/completions", bodies)             -> parsed JSON per body, in input order

Request i goes to replica i mod n (a retry moves on to the next one), so a call's requests are
spread the same way on every run. Retried, with exponential backoff (0.5 s, 1 s, 2 s, ... capped at
30 s) or the server's `Retry-After` when it sends one: 429, 5xx, time-outs, refused or reset
connections, and bodies that are not whole JSON (a proxy cut them short). Other 4xx answers are the
caller's mistake and are not retried. After the last try a `UserError` (exit 2) names the endpoint,
the credential-free URL and the last error; what was computed before is kept by the engine's
journal and the result cache, so a rerun resumes. The API key travels only in the Authorization
header: it is in no message, repr or record.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit, urlunsplit

from kbench.errors import UserError
from kbench.models.served.spec import redact_url

log = logging.getLogger(__name__)

RETRIED_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
BACKOFF_START, BACKOFF_CAP = 0.5, 30.0


class RequestFailed(Exception):
    """One try failed; `retry_after` is the server's wish in seconds (None: back off)."""

    def __init__(self, message: str, retryable: bool, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


class Refused(UserError):
    """The server refused a request (a 4xx other than 429): never retried; `try_post` answers None."""


class ServedClient:
    def __init__(self, urls: Sequence[str], api_key: str | None, *, concurrency: int = 4, timeout: float = 120, retries: int = 5):
        import requests

        self._requests = requests
        self.urls = tuple(urls)
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._api_key = api_key or None  # only to cut it out of error bodies (some servers echo the header)
        self.concurrency = concurrency
        self.timeout = timeout
        self.retries = retries
        self._local = threading.local()  # one requests.Session per worker thread
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="kbench-served")
        self.sleep = time.sleep  # the back-off wait (a test may count the waits)

    def __repr__(self) -> str:  # never the key
        return f"ServedClient({[redact_url(u) for u in self.urls]}, concurrency={self.concurrency})"

    def get(self, path: str, replica: int = 0) -> dict:
        return self._with_retries("GET", path, None, replica)

    def post(self, path: str, body: dict, replica: int = 0) -> dict:
        return self._with_retries("POST", path, body, replica)

    def post_many(self, path: str, bodies: Sequence[dict]) -> list[dict]:
        """One POST per body, at most `concurrency` in flight; answers in input order."""
        futures = [self._pool.submit(self.post, path, body, i) for i, body in enumerate(bodies)]
        return [future.result() for future in futures]

    def try_post(self, path: str, body: dict) -> dict | None:
        """The answer, or None where the server refuses the request (a 4xx other than 429): for
        the probe, which asks what exists. Overload and faults are retried as everywhere."""
        try:
            return self._with_retries("POST", path, body, 0)
        except Refused:
            return None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ one request
    def _with_retries(self, method: str, path: str, body: dict | None, replica: int) -> dict:
        last: RequestFailed | None = None
        for attempt in range(self.retries + 1):
            url = self.urls[(replica + attempt) % len(self.urls)]
            try:
                return self._once(method, url, path, body)
            except RequestFailed as exc:
                last = exc
                if not exc.retryable:
                    raise Refused(f"server {redact_url(url)} refused {path}: {exc}") from None
                if attempt < self.retries:
                    wait = exc.retry_after if exc.retry_after is not None else min(BACKOFF_CAP, BACKOFF_START * 2**attempt)
                    log.warning("%s %s: %s; retry %d/%d in %.1f s", redact_url(url), path, exc, attempt + 1, self.retries, wait)
                    self.sleep(wait)
        urls = ", ".join(redact_url(u) for u in self.urls)
        raise UserError(
            f"server {urls} did not answer {path} after {self.retries + 1} tries (last: {last}); "
            "rerun the same command once the server is back: finished work is kept"
        )

    def _once(self, method: str, root: str, path: str, body: dict | None) -> dict:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = self._requests.Session()
        url = _join(root, path)
        exceptions = self._requests.exceptions
        try:
            response = session.request(method, url, json=body, headers=self._headers, timeout=self.timeout)
        except exceptions.Timeout:
            raise RequestFailed(f"no answer within {self.timeout:g} s", True) from None
        except (exceptions.ConnectionError, exceptions.ChunkedEncodingError) as exc:
            raise RequestFailed(f"connection failed ({type(exc).__name__})", True) from None
        if response.status_code != 200:
            retry_after = _retry_after(response.headers.get("Retry-After"))
            retryable = response.status_code in RETRIED_STATUS or response.status_code >= 500
            text = response.text.replace(self._api_key, "<api key>") if self._api_key else response.text
            detail = text[:200].replace("\n", " ")  # redacted before the cut: no part of the key either
            raise RequestFailed(f"HTTP {response.status_code}: {detail}", retryable, retry_after, response.status_code)
        try:
            return json.loads(response.content)
        except ValueError:
            raise RequestFailed(f"the answer is not whole JSON ({len(response.content)} bytes)", True) from None


def _join(root: str, path: str) -> str:
    """`path` ("/v1/completions", or vLLM's "/tokenize" beside the API) on the server of API root `root`."""
    parts = urlsplit(root)
    server = parts.path.rstrip("/").removesuffix("/v1")
    return urlunsplit((parts.scheme, parts.netloc, server + path, parts.query, ""))


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (the delta form; an HTTP date is rare from model servers), capped."""
    if value is None:
        return None
    try:
        return min(BACKOFF_CAP, max(0.0, float(value)))
    except ValueError:
        return None
