"""Remote source files: download once into the cache, verify the sha256, unpack archives.

Contract:
  * `fetch(url, sha256, cache_dir)` returns `cache_dir/downloads/<sha256>/<file name>`. The bytes
    are streamed to a temporary file, hashed, and only renamed into place when the hash matches,
    so a reader never sees an unverified or half-written download. A cached file is re-hashed
    before every use (a damaged cache is downloaded again, never used).
  * `materialize(location, sha256, cache_dir, key=...)` turns a recipe location into a local
    path: a local path is returned as is; an http(s) URL is fetched, and a `.zip` / `.tar.gz` /
    `.tgz` is unpacked (once, atomically) into `downloads/<sha256>/extracted/`.
Errors are `UserError`s naming the URL and, via `key`, the recipe parameter at fault.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from kbench.errors import UserError
from kbench.io import atomic_path, sha256_file
from kbench.sources.user_agent import user_agent

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")
_RETRIES = 3


def is_url(location: str) -> bool:
    return urlparse(str(location)).scheme in ("http", "https")


def _file_name(url: str) -> str:
    name = Path(urlparse(url).path).name
    return name or "download"


def download_file(
    url: str, dest: Path, *, key: str = "url", timeout: float = 60, on_bytes: Callable[[int, int | None], None] | None = None
) -> tuple[str, int]:
    """Stream `url` into the file `dest` and return (sha256, size); retries 5xx and broken transfers.

    The bytes are hashed as they arrive, exactly as sent (no transfer decoding). A body shorter
    than its Content-Length is a broken transfer ("truncated"); when the server accepts ranges,
    the retry asks for the rest (`Range: bytes=N-`) instead of starting over. `on_bytes(received,
    total)` reports progress. The caller decides where `dest` lives and removes it on failure.
    """
    import requests
    import urllib3

    last_error = ""
    digest, size, resumable = hashlib.sha256(), 0, False
    for attempt in range(_RETRIES):
        if attempt:
            time.sleep(0.5 * 2 ** (attempt - 1))
        headers = {"User-Agent": user_agent()}
        if size and resumable:
            headers["Range"] = f"bytes={size}-"
        try:
            with requests.get(url, stream=True, timeout=timeout, headers=headers) as resp:
                if resp.status_code >= 500 or resp.status_code == 429:
                    last_error = f"HTTP {resp.status_code}"
                    continue
                resumed = resp.status_code == 206 and resp.headers.get("Content-Range", "").startswith(f"bytes {size}-")
                if resp.status_code != 200 and not resumed:
                    raise UserError(f"{key}: download failed with HTTP {resp.status_code}: {url}")
                if not resumed:  # a whole body: start the file and the hash over
                    digest, size = hashlib.sha256(), 0
                resumable = resp.headers.get("Accept-Ranges", "").lower() == "bytes"
                declared = resp.headers.get("Content-Length")
                total = size + int(declared) if declared and declared.isdigit() else None
                with open(dest, "ab" if resumed else "wb") as fh:
                    for block in resp.raw.stream(1 << 20, decode_content=False):
                        fh.write(block)
                        digest.update(block)
                        size += len(block)
                        if on_bytes:
                            on_bytes(size, total)
                if total is not None and size != total:
                    last_error = f"truncated: received {size:,} of {total:,} bytes"
                    continue
                return digest.hexdigest(), size
        except (requests.RequestException, urllib3.exceptions.HTTPError) as exc:
            last_error = (
                f"truncated: the connection broke after {size:,} bytes" if size else f"connection failed: {type(exc).__name__}"
            )
    raise UserError(f"{key}: download failed after {_RETRIES} attempts ({last_error}): {url}")


def fetch(url: str, sha256: str | None, cache_dir: Path, *, key: str = "url", timeout: float = 60) -> Path:
    """Download `url` into the cache (or reuse a verified copy) and return the local file."""
    if not sha256:
        raise UserError(f'{key}: a download needs its sha256 (add `{key}_sha256 = "..."` to the recipe): {url}')
    sha256 = sha256.lower()
    if not _SHA256.match(sha256):
        raise UserError(f"{key}: sha256 must be 64 hex digits, got {sha256!r}")
    target = Path(cache_dir) / "downloads" / sha256 / _file_name(url)
    if target.is_file():
        if sha256_file(target) == sha256:
            return target
        target.unlink()  # damaged cache entry: fetch it again
    with atomic_path(target) as tmp:
        got, _ = download_file(url, tmp, key=key, timeout=timeout)
        if got != sha256:
            raise UserError(f"{key}: checksum mismatch for {url}: expected {sha256}, got {got} (the file was not used)")
    return target


def _safe_extract(archive: Path, dest: Path) -> None:
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if not (dest / member).resolve().is_relative_to(dest.resolve()):
                    raise UserError(f"{archive}: archive member {member!r} would escape the extraction folder")
            zf.extractall(dest)
    else:
        with tarfile.open(archive, "r:gz") as tf:
            tf.extractall(dest, filter="data")  # refuses absolute paths, `..` and links out of dest


def materialize(location: str, sha256: str | None, cache_dir: Path, *, key: str, base: Path | None = None) -> Path:
    """A local file or folder for `location` (a path, relative to `base`, or an http(s) URL)."""
    if not is_url(location):
        path = Path(location).expanduser()
        if base is not None and not path.is_absolute():
            path = (base / path).resolve()
        if not path.exists():
            raise UserError(f"{key}: {path} does not exist")
        return path
    downloaded = fetch(location, sha256, cache_dir, key=key)
    if not downloaded.name.endswith(_ARCHIVE_SUFFIXES):
        return downloaded
    extracted = downloaded.parent / "extracted"
    if extracted.is_dir():
        return extracted
    tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=downloaded.parent))
    try:
        try:
            _safe_extract(downloaded, tmp)
        except (zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
            raise UserError(f"{key}: {location} is not a valid archive ({exc})") from exc
        os.replace(tmp, extracted)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return extracted
