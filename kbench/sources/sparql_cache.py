"""On-disk cache of SPARQL query results: one JSON file per (endpoint identity, query text).

Layout: `<dir>/<key[:2]>/<key>.json` with `key = sha256([endpoint identity, query text])`.
Each entry stores the endpoint, the query, the result rows and the sha256 of those rows. A
reader trusts an entry only when all of them check out; anything else (bad JSON, a different
query under the same name, rows edited after writing) is a corrupt entry: it is reported with a
`CacheWarning` and treated as a miss, and the fresh result overwrites it. Entries are written
atomically, so a killed process never leaves half an entry. No pickle: JSON only.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from kbench.io import stable_hash, write_json

ENTRY_VERSION = 1

Rows = list[dict[str, str]]


class CacheWarning(UserWarning):
    """A cache entry could not be trusted and will be recomputed."""


class QueryCache:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    @staticmethod
    def key(endpoint: str, query: str) -> str:
        return stable_hash([endpoint, query])

    def path(self, endpoint: str, query: str) -> Path:
        key = self.key(endpoint, query)
        return self.directory / key[:2] / f"{key}.json"

    def get(self, endpoint: str, query: str) -> Rows | None:
        """The cached rows, or None on a miss or an untrustworthy entry (which is warned about)."""
        path = self.path(endpoint, query)
        if not path.exists():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            rows = entry["rows"]
            trusted = (
                entry.get("version") == ENTRY_VERSION
                and entry.get("endpoint") == endpoint
                and entry.get("query") == query
                and isinstance(rows, list)
                and entry.get("rows_sha256") == stable_hash(rows)
            )
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
            trusted = False
        if not trusted:
            warnings.warn(f"SPARQL cache entry {path} is corrupt or was modified; recomputing it", CacheWarning, stacklevel=2)
            return None
        return rows

    def put(self, endpoint: str, query: str, rows: Rows) -> None:
        write_json(
            self.path(endpoint, query),
            {
                "version": ENTRY_VERSION,
                "endpoint": endpoint,
                "query": query,
                "rows": rows,
                "rows_sha256": stable_hash(rows),
            },
        )
