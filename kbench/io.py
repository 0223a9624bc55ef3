"""File helpers shared by every command: atomic writes, hashing, JSONL reading with locations,
and the versioned JSON Schemas (`load_schema`).

Every output kbench writes goes through `atomic_path`, so a reader never sees a half-written
file: the data goes to a temporary file in the same folder, is flushed to disk, then renamed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbench.errors import InputError, UserError

# mkstemp creates files 0600; outputs should get the usual permissions (0666 minus the umask).
_UMASK = os.umask(0)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to `path`; on success it is renamed onto `path`."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.fchmod(fd, FILE_MODE)
        os.close(fd)
    except OSError as exc:
        raise UserError(f"cannot write to {path.parent}: {exc.strerror or exc}") from exc
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as fh:  # make the bytes durable before they become visible
            os.fsync(fh.fileno())
        os.replace(tmp_path, path)
    except OSError as exc:
        tmp_path.unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from exc
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def to_json(obj: Any) -> str:
    """Canonical, stable JSON text (sorted keys) so that equal content gives equal bytes."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"


def write_json(path: str | Path, obj: Any) -> None:
    write_text(path, to_json(obj))


def write_jsonl(path: str | Path, rows: list[dict]) -> None:
    write_text(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True, default=str) + "\n" for r in rows))


def write_parquet(path: str | Path, frame) -> None:
    """Write a polars DataFrame atomically (no statistics timestamps, so bytes are reproducible)."""
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp)


def stable_hash(obj: Any) -> str:
    """sha256 of the canonical JSON of `obj`: the key of configs, cache entries and markers."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


# Package data, so installs from a wheel have them too; the top-level `schemas/` is a link here.
SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


def load_schema(name: str) -> dict:
    """A versioned JSON Schema of a record or result file (e.g. "question.v1.json")."""
    path = SCHEMA_DIR / name
    if not path.is_file():
        known = ", ".join(sorted(p.name for p in SCHEMA_DIR.glob("*.json")))
        raise UserError(f"unknown schema {name!r}; known schemas: {known}")
    return read_json(path)


def read_json(path: str | Path) -> Any:
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from exc
    except UnicodeDecodeError as exc:
        raise InputError(path, "not UTF-8 text") from exc


def iter_jsonl(path: str | Path, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-blank line; errors name the file and line."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    seen_any = False
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                raise InputError(path, "line is not UTF-8 text", line=lineno) from exc
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(path, f"malformed JSON ({exc.msg})", line=lineno) from exc
            if not isinstance(obj, dict):
                raise InputError(path, "expected a JSON object", line=lineno)
            missing = [k for k in required if k not in obj]
            if missing:
                raise InputError(path, f"missing field(s) {', '.join(missing)}", line=lineno)
            seen_any = True
            yield lineno, obj
    if not seen_any:
        raise InputError(path, "file is empty")
