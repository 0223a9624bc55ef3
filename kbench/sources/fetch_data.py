"""`kbench data fetch`: download catalog sources into a data root, verified, all or nothing.

For each source folder: every download is streamed into a staging folder inside the data root
(`.kbench-fetch-*`, so the final rename stays on one file system), checked against its
Content-Length and its sha256 (pinned in the catalog, else the one `kbench-data.lock` recorded,
else recorded now), archives are read member by member (only the members the catalog maps, as
regular files under their base names: nothing can land outside the folder), and only the
complete folder is renamed into place. Any failure removes the staging folder: a data root
holds finished folders or nothing.

`--mirror BASE` (or KBENCH_DATA_MIRROR) fetches `https://host/path` from `BASE/host/path`
instead; checksums and the lock still apply to the original URL.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

from kbench.errors import UserError
from kbench.io import read_json, write_json, write_text
from kbench.sources.catalog import Download, Source, source
from kbench.sources.download import download_file

LOCK_FILE = "kbench-data.lock"
MIRROR_ENV = "KBENCH_DATA_MIRROR"
_LOCK_VERSION = 1


def mirrored(url: str, mirror: str | None) -> str:
    """`url` as served by a mirror laid out as BASE/<host>/<path>."""
    if not mirror:
        return url
    parts = urlparse(url)
    return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}"


@dataclass
class DataLock:
    """`kbench-data.lock`: the sha256 and size first seen for each download without a pinned checksum."""

    path: Path
    files: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path) -> DataLock:
        path = root / LOCK_FILE
        if not path.exists():
            return cls(path)
        data = read_json(path)
        if not isinstance(data, dict) or data.get("kbench_data_lock") != _LOCK_VERSION or not isinstance(data.get("files"), dict):
            raise UserError(f"{path}: not a kbench data lock (version {_LOCK_VERSION}); move it away to record anew")
        return cls(path, data["files"])

    def save(self) -> None:
        write_json(self.path, {"kbench_data_lock": _LOCK_VERSION, "files": dict(sorted(self.files.items()))})


@dataclass
class _Fetched:
    path: Path
    sha256: str
    size: int
    recorded: bool  # True: its checksum was first seen now (goes into the lock once it proved usable)


Say = Callable[[str], None]
OnBytes = Callable[[str, int, "int | None"], None]  # (url, received, total or None)


def _download(item: Download, staging: Path, lock: DataLock, mirror: str | None, say: Say, on_bytes: OnBytes | None) -> _Fetched:
    expected = item.sha256 or lock.files.get(item.url, {}).get("sha256")
    where = mirrored(item.url, mirror)
    fd, name = tempfile.mkstemp(dir=staging, prefix="download-")
    os.close(fd)
    path = Path(name)
    say(f"downloading {where}")
    report = (lambda got, total: on_bytes(where, got, total)) if on_bytes else None
    sha, size = download_file(where, path, key=item.url, on_bytes=report)
    if expected and sha != expected:
        origin = "pinned in kbench's catalog" if item.sha256 else f"recorded in {lock.path}"
        raise UserError(
            f"checksum mismatch for {where}: expected {expected} ({origin}), got {sha}. "
            "The download is corrupted or changed upstream; nothing was written."
        )
    return _Fetched(path, sha, size, recorded=expected is None)


def _member_target(folder: Path, subdir: str, member: str, archive_url: str) -> Path:
    parts = PurePosixPath(member)
    if parts.is_absolute() or ".." in parts.parts:
        raise UserError(f"{archive_url}: archive member {member!r} points outside the archive; refusing the archive")
    return folder / subdir / parts.name


def _unpack(fetched: _Fetched, item: Download, folder: Path) -> None:
    """Copy the archive members `item.members` maps into `folder` (regular files only)."""
    matched = {pattern: 0 for pattern, _ in item.members}

    def place(member: str, read) -> None:
        for pattern, subdir in item.members:
            if fnmatch.fnmatchcase(member, pattern):
                target = _member_target(folder, subdir, member, item.url)
                target.parent.mkdir(parents=True, exist_ok=True)
                with read() as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                matched[pattern] += 1
                return

    try:
        if urlparse(item.url).path.endswith(".zip"):
            with zipfile.ZipFile(fetched.path) as zf:
                for info in zf.infolist():
                    if not info.is_dir():
                        place(info.filename, lambda info=info: zf.open(info))
        else:
            with tarfile.open(fetched.path, "r:*") as tf:
                for info in tf:
                    if info.isfile():
                        place(info.name, lambda info=info: tf.extractfile(info))
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as exc:
        raise UserError(
            f"{item.url}: not a valid archive ({exc}); the download is truncated or damaged, nothing was written"
        ) from exc
    empty = [p for p, n in matched.items() if n == 0]
    if empty:
        raise UserError(
            f"{item.url}: no archive member matches {empty[0]!r}; the upstream layout changed, "
            "so kbench's catalog needs updating (nothing was written)"
        )


def _provenance(src: Source, fetched: dict[str, _Fetched]) -> str:
    ref = src.reference
    lines = [
        f"# {src.title}",
        "",
        f"Fetched by `kbench data fetch {src.name}` from {src.homepage}.",
        "",
        f"License: {ref.license or 'not stated'}. {ref.note}".rstrip(),
        "",
    ]
    if src.layout:
        lines += [f"Layout: {src.layout}", ""]
    lines += ["| url | sha256 | bytes |", "|---|---|---:|"]
    for item in src.downloads:
        got = fetched[item.url]
        lines.append(f"| {item.url} | {got.sha256} | {got.size} |")
    return "\n".join(lines) + "\n"


def _place(folder: Path, target: Path, staging: Path) -> None:
    """Rename the finished folder into place; an existing one (--force) is moved aside first."""
    if target.exists():
        os.rename(target, staging / f"replaced-{target.name}")
    os.rename(folder, target)


def fetch_sources(names: list[str], root: Path, **options: Any) -> list[Path]:
    """Fetch the named catalog sources into `root` (`options`: `fetch_folders`'s); returns the folders
    written (existing ones are kept unless `force`)."""
    return fetch_folders([source(n) for n in dict.fromkeys(names)], root, **options)


def fetch_folders(
    sources: list[Source],
    root: Path,
    *,
    mirror: str | None = None,
    force: bool = False,
    say: Say = lambda _: None,
    on_bytes: OnBytes | None = None,
) -> list[Path]:
    """Fetch `sources` (catalog entries, or others of the same shape) into `root`."""
    root = Path(root).expanduser().resolve()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the data folder {root}: {exc.strerror or exc}") from exc
    lock = DataLock.load(root)
    written: list[Path] = []
    staging = Path(tempfile.mkdtemp(dir=root, prefix=".kbench-fetch-"))
    try:
        fetched: dict[str, _Fetched] = {}  # one download per URL, shared by sources (LAMA's data.zip)
        for src in sources:
            target = root / src.name
            if target.exists() and not force:
                say(f"{src.name}: already in {root} (use --force to download it again)")
                continue
            folder = staging / src.name
            folder.mkdir()
            for item in src.downloads:
                if item.url not in fetched:
                    fetched[item.url] = _download(item, staging, lock, mirror, say, on_bytes)
                if item.is_archive:
                    _unpack(fetched[item.url], item, folder)
                else:
                    dest = folder / item.dest
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(fetched[item.url].path, dest)
            if src.convert is not None:
                say(f"{src.name}: converting")
                src.convert(folder)
            write_text(folder / "SOURCE.md", _provenance(src, fetched))
            recorded = {item.url for item in src.downloads if fetched[item.url].recorded}
            for url in sorted(recorded - set(lock.files)):
                lock.files[url] = {"sha256": fetched[url].sha256, "bytes": fetched[url].size}
                say(f"recorded the sha256 of {url} in {lock.path}")
            if recorded:
                lock.save()
            _place(folder, target, staging)
            written.append(target)
            say(f"{src.name}: written to {target}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written
