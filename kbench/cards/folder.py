"""A built dataset folder as cards and publishing see it.

    DIR/README.md                        the card (written by `kbench card`)
    DIR/manifest.json, DIR/stats.json    written by `kbench build`
    DIR/data/<config>/<split>.parquet    the splits (also `<split>-00000-of-00002.parquet` shards)
    DIR/rejected/<stage>.parquet         dropped rows with their reason
    DIR/.kbench/ ...                     work files: never published

`publishable_files` is the one rule for what leaves the machine; `kbench publish --dry-run` prints
exactly its result. The manifest's `files` section maps each publishable file except README.md and
manifest.json (which cannot hash itself) to its sha256 and size; `kbench card` records it when
the build did not, and publishing refuses a folder whose files no longer match it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.errors import InputError, UserError
from kbench.io import read_json, sha256_file, write_json

_SHARD = re.compile(r"-\d{5}-of-\d{5}$")
_WORK_FILE_SUFFIXES = (".tmp", ".lock", ".partial", ".incomplete")
UNHASHED = ("README.md", "manifest.json")


@dataclass
class SplitFile:
    config: str
    split: str
    path: Path  # relative to the folder, posix style
    rows: int


@dataclass
class DatasetFolder:
    root: Path
    manifest: dict[str, Any]
    stats: dict[str, Any]
    splits: list[SplitFile] = field(default_factory=list)

    def rows(self, config: str | None = None) -> int:
        return sum(s.rows for s in self.splits if config is None or s.config == config)


def is_work_file(relative: Path) -> bool:
    """Work files never leave the machine: hidden paths (.kbench/, temp files), locks, partial writes."""
    parts = relative.parts
    return (
        any(p.startswith(".") or p == "__pycache__" for p in parts)
        or relative.name == "lock"
        or relative.name.endswith(_WORK_FILE_SUFFIXES)
    )


def publishable_files(root: Path) -> list[str]:
    """Every file under `root` that would be uploaded, as sorted posix paths relative to it."""
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and not path.is_symlink() and not is_work_file(rel):
            found.append(rel.as_posix())
    return sorted(found)


def load_folder(root: str | Path) -> DatasetFolder:
    import pyarrow.parquet as pq

    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root}: not a folder")
    manifest = read_json(root / "manifest.json")
    if not isinstance(manifest, dict) or "kbench_manifest_version" not in manifest:
        raise InputError(root / "manifest.json", "not a kbench dataset manifest", key="kbench_manifest_version")
    stats = read_json(root / "stats.json") if (root / "stats.json").exists() else {}
    splits = []
    for path in sorted((root / "data").glob("*/*.parquet")):
        rel = path.relative_to(root)
        try:
            rows = pq.ParquetFile(path).metadata.num_rows
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise InputError(path, f"not a readable parquet file ({exc})") from exc
        splits.append(SplitFile(config=path.parent.name, split=_SHARD.sub("", path.stem), path=rel, rows=rows))
    if not splits:
        raise InputError(root / "data", "no split files (data/<config>/<split>.parquet); was the build finished?")
    return DatasetFolder(root=root, manifest=manifest, stats=stats, splits=splits)


def hash_files(root: Path) -> dict[str, dict[str, Any]]:
    return {
        rel: {"sha256": sha256_file(root / rel), "bytes": (root / rel).stat().st_size}
        for rel in publishable_files(root)
        if rel not in UNHASHED
    }


def file_mismatches(root: Path, recorded: dict[str, Any]) -> list[str]:
    """How the folder differs from the manifest's `files` section, one line per problem."""
    problems = []
    present = set(publishable_files(root)) - set(UNHASHED)
    for rel in sorted(set(recorded) - present):
        problems.append(f"{rel}: listed in the manifest but missing")
    for rel in sorted(present - set(recorded)):
        problems.append(f"{rel}: present but not listed in the manifest")
    for rel in sorted(present & set(recorded)):
        if sha256_file(root / rel) != recorded[rel].get("sha256"):
            problems.append(f"{rel}: sha256 differs from the manifest")
    return problems


def ensure_file_hashes(folder: DatasetFolder) -> str:
    """Verify the manifest's `files` section, or record it when the build did not.

    Returns "verified" or "recorded". A mismatch means the data changed after it was built (or
    recorded) and the card would describe other data: that is an error, not something to paper over.
    """
    recorded = folder.manifest.get("files")
    if recorded:
        problems = file_mismatches(folder.root, recorded)
        if problems:
            raise InputError(
                folder.root / "manifest.json", "files do not match the manifest: " + "; ".join(problems[:5]), key="files"
            )
        return "verified"
    folder.manifest["files"] = hash_files(folder.root)
    write_json(folder.root / "manifest.json", folder.manifest)
    return "recorded"
