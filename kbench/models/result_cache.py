"""A persistent cache of model outputs: sqlite (WAL), JSON values, one checksum per row.

Contract:
- `key(**parts)` hashes everything that changes an output (model identity - which already
  includes the dtype -, method, prompt, gold/answer, decoding parameters, seed, intervention,
  the source of the code that computed it and the kbench/torch/transformers versions: see
  `CachedModel._keys`) and nothing else: batch size, device and run directory never enter a
  key, so a result computed once is reused by every later run of the same code.
- `get_many(keys) -> {key: value}` returns only the stored, intact rows. A row whose checksum
  does not match its value (edited or corrupted on disk) is ignored with a warning, counted as
  a miss and overwritten by the next `put_many`.
- `put_many({key: value}, method=, model=)` stores JSON-serialisable values in one
  transaction, with the method and model name and the time, for `summary()` only.
- `summary()` (path, bytes, rows, rows per method and model, oldest/newest) and `clear()`
  serve `kbench cache info` / `kbench cache clear`.
- `hits` / `misses` count lookups since the cache was opened (tests and progress reports).

No pickle: values are JSON text, so a cache file can be inspected and cannot execute code.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from kbench.errors import UserError
from kbench.io import stable_hash

SCHEMA = "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum TEXT NOT NULL)"
# Descriptive columns (not part of the key), added to caches written by older kbench versions.
DESCRIPTIVE_COLUMNS = {"method": "TEXT", "model": "TEXT", "created": "REAL"}
BUSY_TIMEOUT_S = 60  # how long a process waits for another one writing the cache


def _checksum(key: str, value_text: str) -> str:
    # The key is part of the checksum so a value copied onto another row is caught too.
    return hashlib.sha256(f"{key}\n{value_text}".encode()).hexdigest()


class ResultCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
            self._set_up()
        except sqlite3.DatabaseError as exc:
            raise UserError(f"cannot open the result cache {self.path}: {exc}") from exc

    def _set_up(self) -> None:
        """WAL mode and the table, safe when several processes open a new cache at once (the
        ranks of `accelerate launch`). Switching to WAL can report "locked" without waiting for
        the busy timeout, so it is retried; the table's DDL runs in an IMMEDIATE transaction, one
        process at a time, so no two processes add the same column."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    self._db.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute(SCHEMA)
            present = {row[1] for row in self._db.execute("PRAGMA table_info(results)")}
            for column, kind in DESCRIPTIVE_COLUMNS.items():
                if column not in present:
                    self._db.execute(f"ALTER TABLE results ADD COLUMN {column} {kind}")
            self._db.commit()
        except BaseException:
            self._db.rollback()
            raise

    @staticmethod
    def key(**parts: Any) -> str:
        return stable_hash(parts)

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), 500):  # sqlite limits the number of bound parameters
                chunk = unique[start : start + 500]
                rows = self._db.execute(
                    f"SELECT key, value, checksum FROM results WHERE key IN ({','.join('?' * len(chunk))})", chunk
                )
                for key, value_text, checksum in rows:
                    if _checksum(key, value_text) != checksum:
                        warnings.warn(
                            f"result cache {self.path}: row {key[:12]}… failed its checksum; recomputing it", stacklevel=2
                        )
                        continue
                    found[key] = json.loads(value_text)
        self.hits += sum(1 for k in keys if k in found)
        self.misses += sum(1 for k in keys if k not in found)
        return found

    def put_many(self, items: dict[str, Any], method: str | None = None, model: str | None = None) -> None:
        rows = []
        now = time.time()
        for key, value in items.items():
            text = json.dumps(value, sort_keys=True, ensure_ascii=False)
            rows.append((key, text, _checksum(key, text), method, model, now))
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO results (key, value, checksum, method, model, created) VALUES (?, ?, ?, ?, ?, ?)", rows
            )

    def summary(self) -> dict[str, Any]:
        """What `kbench cache info` shows. Rows written before kbench recorded methods count
        under "unknown"."""
        with self._lock:
            rows = self._db.execute("SELECT COUNT(*), MIN(created), MAX(created) FROM results").fetchone()
            by = {
                column: dict(
                    self._db.execute(f"SELECT COALESCE({column}, 'unknown'), COUNT(*) FROM results GROUP BY 1 ORDER BY 2 DESC")
                )
                for column in ("method", "model")
            }
        files = [self.path, *(self.path.with_name(self.path.name + s) for s in ("-wal", "-shm"))]
        return {
            "path": str(self.path),
            "bytes": sum(f.stat().st_size for f in files if f.exists()),
            "rows": rows[0],
            "by_method": by["method"],
            "by_model": by["model"],
            "oldest": rows[1],
            "newest": rows[2],
        }

    def clear(self) -> int:
        """Delete every row and give the space back; returns the number of rows deleted."""
        with self._lock:
            with self._db:
                deleted = self._db.execute("DELETE FROM results").rowcount
            self._db.execute("VACUUM")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return deleted

    def close(self) -> None:
        self._db.close()
