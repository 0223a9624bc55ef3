"""Wikipedia pageviews (Wikimedia REST API) as an entity-frequency source.

`PageviewsClient.total_views(article)` sums the monthly views of one article over a window of
months (MAPLE: March 2021 - February 2022, 12 months), using

    {base_url}/metrics/pageviews/per-article/{project}/{access}/{agent}/{article}/monthly/{start}/{end}

with start/end as YYYYMMDD00. Windows longer than `months_per_request` are fetched in several
requests ("pages" of months) and summed.

Behaviour against the real service (https://wikimedia.org/api/rest_v1, which asks clients for a
descriptive User-Agent and to stay under ~100 requests/s):
  * a descriptive User-Agent naming kbench and a contact URL;
  * at most one request per `min_interval_s` (rate limiting, per client);
  * 429 and 5xx are retried up to `max_attempts` times, waiting `Retry-After` seconds when the
    server sends it and exponential backoff otherwise; then a `UserError`;
  * 404 (article unknown, or no views recorded in the months asked) is not 0 views: a window
    whose every request answers 404 is *missing* (`total_views` returns None); a window with data
    for some of its months sums those months;
  * an on-disk JSON cache, one file per (endpoint, article, window), written atomically; an entry
    whose stored key does not match is ignored and fetched again. Rerunning after an interrupt
    only asks for the articles not yet cached.

The `pageviews` frequency source (`kbench.construct.frequency.pageviews`) uses this client.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

from kbench.errors import InputError, UserError
from kbench.io import read_json, stable_hash, write_json
from kbench.sources.user_agent import user_agent

DEFAULT_BASE_URL = "https://wikimedia.org/api/rest_v1"


def month_window(start_month: str, months: int) -> list[tuple[int, int]]:
    """[(year, month), ...] for `months` consecutive months from "YYYY-MM"."""
    try:
        year, month = (int(x) for x in start_month.split("-"))
        if not 1 <= month <= 12:
            raise ValueError
    except ValueError:
        raise UserError(f"start_month must look like 2021-03, got {start_month!r}") from None
    if months < 1:
        raise UserError(f"months must be at least 1, got {months}")
    out = []
    for i in range(months):
        y, m = divmod(month - 1 + i, 12)
        out.append((year + y, m + 1))
    return out


class PageviewsClient:
    def __init__(
        self,
        cache_dir: Path,
        *,
        base_url: str = DEFAULT_BASE_URL,
        project: str = "en.wikipedia",
        access: str = "all-access",
        agent: str = "user",
        start_month: str = "2021-03",
        months: int = 12,
        months_per_request: int = 12,
        min_interval_s: float = 0.02,
        max_attempts: int = 5,
        backoff_s: float = 1.0,
        timeout_s: float = 30.0,
    ):
        import requests

        self.base_url = base_url.rstrip("/")
        self.project, self.access, self.agent = project, access, agent
        self.window = month_window(start_month, months)
        self.months_per_request = max(1, months_per_request)
        self.min_interval_s, self.max_attempts, self.backoff_s, self.timeout_s = (
            min_interval_s,
            max_attempts,
            backoff_s,
            timeout_s,
        )
        self.cache_dir = cache_dir / "pageviews"
        self.session = requests.Session()
        self.session.headers["User-Agent"] = user_agent()
        self.requests_sent = 0
        self.cache_hits = 0
        self._last_request = 0.0

    def _url(self, article: str, first: tuple[int, int], last: tuple[int, int]) -> str:
        title = quote(article.strip().replace(" ", "_"), safe="")
        start = f"{first[0]:04d}{first[1]:02d}0100"
        end = f"{last[0]:04d}{last[1]:02d}0100"
        return (
            f"{self.base_url}/metrics/pageviews/per-article/{self.project}/{self.access}/{self.agent}/"
            f"{title}/monthly/{start}/{end}"
        )

    def _get(self, url: str) -> int | None:
        """Views summed over one response; None for 404 (no such article, or no data in those months)."""
        import requests

        for attempt in range(1, self.max_attempts + 1):
            wait = self._last_request + self.min_interval_s - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self._last_request = time.monotonic()
            self.requests_sent += 1
            try:
                response = self.session.get(url, timeout=self.timeout_s)
            except requests.RequestException as exc:
                if attempt == self.max_attempts:
                    raise UserError(f"pageviews request failed after {attempt} attempts: {exc}") from exc
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
                continue
            if response.status_code == 404:
                return None
            if response.status_code == 429 or response.status_code >= 500:
                if attempt == self.max_attempts:
                    raise UserError(f"pageviews API answered {response.status_code} {attempt} times for {url}")
                retry_after = response.headers.get("Retry-After", "")
                time.sleep(float(retry_after) if retry_after.isdigit() else self.backoff_s * 2 ** (attempt - 1))
                continue
            if response.status_code != 200:
                raise UserError(f"pageviews API answered {response.status_code} for {url}")
            try:
                items = response.json()["items"]
                return sum(int(item["views"]) for item in items)
            except (ValueError, KeyError, TypeError) as exc:
                raise UserError(f"pageviews API sent an unexpected body for {url}") from exc
        raise AssertionError("unreachable")

    def total_views(self, article: str) -> int | None:
        """Views over the window; None when no request of the window found the article (all 404)."""
        # "v2": older entries stored a 404 as 0 views; they must not be read as such
        key = stable_hash(["v2", self.base_url, self.project, self.access, self.agent, article, self.window])
        path = self.cache_dir / f"{key}.json"
        if path.exists():
            try:
                entry = read_json(path)
                entry = entry if isinstance(entry, dict) else {}
                views = entry.get("views", "absent")
                if entry.get("key") == key and (views is None or isinstance(views, int)):  # None: missing article
                    self.cache_hits += 1
                    return views
            except InputError:
                pass  # a damaged entry is fetched again
        found = []
        step = self.months_per_request
        for i in range(0, len(self.window), step):
            chunk = self.window[i : i + step]
            views = self._get(self._url(article, chunk[0], chunk[-1]))
            if views is not None:
                found.append(views)
        total = sum(found) if found else None
        write_json(path, {"key": key, "article": article, "window": self.window, "views": total})
        return total
