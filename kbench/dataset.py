"""Open a dataset folder built by `kbench build`: the one place that knows its layout.

    DIR/data/<config>/<split>.parquet     the splits (`write_dataset`)
    DIR/corpus/...                        side files some families carry (LEFT's book text)

`dataset_configs` / `dataset_infos` describe the splits for the Hub card (`write_dataset` and
`kbench card` share them); `run_lock` keeps two writers (a build, a card rewrite) off one folder.
`open_split(DIR, split, config, schema="question.v1.json")` returns a `Split`: its file, sha256
and rows, with the columns checked against the record schema's `required` list (a missing column
is an `InputError` naming the file and the schema). `seeded_sample` draws `--limit` items the
same way for every task.

`resolve_dataset(REF)` turns what `--dataset` names into a folder: a local folder as it is, or a
Hub dataset id `ORG/NAME[@REVISION]` downloaded with huggingface_hub (`snapshot_download`, into
its cache: a second run downloads nothing). A folder inside that cache
(`.../datasets--ORG--NAME/snapshots/COMMIT/`) is described with its repo id and resolved commit,
so the results record exactly which published version was evaluated.
"""

from __future__ import annotations

import fcntl
import os
import random
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, overload

from kbench.errors import InputError, UserError
from kbench.records import QAItem, Question, Statement

SPLIT_ORDER = ("train", "dev", "validation", "test")  # how splits are listed; others follow by name
_HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95})(?:@(?P<revision>[\w./-]{1,200}))?$")
_HUB_SNAPSHOT = re.compile(r"datasets--(?P<org>[^/]+?)--(?P<name>[^/]+)/snapshots/(?P<commit>[0-9a-f]{40})$")

#: A split's row: a record of `kbench.records` where the schema is named, else a plain dict.
R = TypeVar("R", bound=Mapping[str, Any])


@dataclass(frozen=True)
class Split(Generic[R]):
    dataset: Path
    config: str
    name: str
    path: Path
    rows: list[R] = field(repr=False)

    @cached_property
    def sha256(self) -> str:
        from kbench.io import sha256_file

        return sha256_file(self.path)

    def describe(self) -> dict:
        """The `dataset` block of a results envelope."""
        block: dict[str, Any] = {
            "path": str(self.dataset),
            "config": self.config,
            "split": self.name,
            "file": str(self.path),
            "sha256": self.sha256,
        }
        construction = construction_block(Path(self.dataset))
        if construction is not None:  # how the dataset was built: its bins, checks and stand-ins (docs/construction-protocol.md)
            block["construction_protocol"] = construction
        hub = hub_origin(self.dataset)
        return block | {"hub": hub} if hub else block


def construction_block(folder: Path) -> dict | None:
    """The `protocol` block of a built dataset's manifest.json, None when it records none."""
    import json

    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    block = manifest.get("protocol") if isinstance(manifest, dict) else None
    return block if isinstance(block, dict) else None


def hub_origin(folder: Path) -> dict | None:
    """{"repo_id", "commit"} of a folder in huggingface_hub's cache, else None."""
    found = _HUB_SNAPSHOT.search(Path(folder).as_posix().rstrip("/"))
    return {"repo_id": f"{found['org']}/{found['name']}", "commit": found["commit"]} if found else None


def resolve_dataset(ref: str | Path) -> Path:
    """A local dataset folder, or the downloaded snapshot of Hub dataset `ORG/NAME[@REVISION]`."""
    path = Path(ref).expanduser()
    if path.exists():
        return path
    hub_id = _HUB_ID.match(str(ref))
    if hub_id is None:
        raise UserError(f"--dataset {ref}: no such folder, and not a Hub dataset id (ORG/NAME[@REVISION])")
    return download_hub_dataset(hub_id["repo"], hub_id["revision"])


def download_hub_dataset(repo_id: str, revision: str | None = None) -> Path:
    """snapshot_download of a dataset repo (the token from huggingface_hub's usual places, never shown)."""
    try:
        from huggingface_hub import get_token, snapshot_download
        from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError
    except ImportError as exc:
        raise UserError(f"--dataset {repo_id}: a Hub dataset needs huggingface_hub (pip install 'kbench[hub]')") from exc
    wanted = f"{repo_id}@{revision}" if revision else repo_id
    try:
        return Path(snapshot_download(repo_id, repo_type="dataset", revision=revision))
    except RevisionNotFoundError:
        raise UserError(f"--dataset {wanted}: the Hub dataset has no revision {revision!r}") from None
    except RepositoryNotFoundError:
        raise UserError(f"--dataset {wanted}: no local folder of that name and no such Hub dataset (or no access)") from None
    except Exception as exc:  # connection and HTTP errors of every kind: one line, the token removed
        token = get_token()
        message = f"--dataset {wanted}: download from the Hub failed: {type(exc).__name__}: {exc}"
        raise UserError(message.replace(token, "***") if token else message) from None


def configs(dataset: Path) -> list[str]:
    data = Path(dataset) / "data"
    found = sorted(p.name for p in data.glob("*") if p.is_dir()) if data.is_dir() else []
    if not found:
        raise UserError(f"{dataset} is not a dataset folder (no data/<config>/<split>.parquet); build one with `kbench build`")
    return found


def split_names(dataset: Path, config: str | None = None) -> list[str]:
    config = resolve_config(dataset, config)
    return sorted(p.stem for p in (Path(dataset) / "data" / config).glob("*.parquet"))


def resolve_config(dataset: Path, config: str | None) -> str:
    known = configs(dataset)
    if config is None:
        return "default" if "default" in known else known[0]
    if config not in known:
        raise UserError(f"{dataset}: no config {config!r}; configs: {', '.join(known)}")
    return config


def split_path(dataset: Path, split: str, config: str | None = None) -> Path:
    config = resolve_config(dataset, config)
    path = Path(dataset) / "data" / config / f"{split}.parquet"
    if not path.is_file():
        raise UserError(f"{dataset}: config {config!r} has no split {split!r}; splits: {', '.join(split_names(dataset, config))}")
    return path


def has_split(dataset: Path, split: str, config: str | None = None) -> bool:
    try:
        split_path(dataset, split, config)
    except UserError:
        return False
    return True


def required_columns(schema_name: str) -> list[str]:
    from kbench.io import load_schema

    return list(load_schema(schema_name).get("required", []))


def read_rows(path: Path, schema_name: str | None = None, hint: str = "") -> list[dict]:
    """All rows of a split file; with `schema_name`, its required columns must be present."""
    import polars as pl

    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # polars raises several error types for a damaged file
        raise InputError(path, f"cannot read parquet: {exc}") from exc
    if schema_name is not None:
        missing = [c for c in required_columns(schema_name) if c not in frame.columns]
        if missing:
            raise InputError(path, f"missing column(s) {', '.join(missing)} (see schemas/{schema_name}){hint}")
    return frame.to_dicts()


@overload
def open_split(
    dataset: Path, split: str, config: str | None = ..., *, schema: Literal["question.v1.json"], hint: str = ...
) -> Split[Question]: ...
@overload
def open_split(
    dataset: Path, split: str, config: str | None = ..., *, schema: Literal["statement.v1.json"], hint: str = ...
) -> Split[Statement]: ...
@overload
def open_split(
    dataset: Path, split: str, config: str | None = ..., *, schema: Literal["qa_item.v1.json"], hint: str = ...
) -> Split[QAItem]: ...
@overload
def open_split(dataset: Path, split: str, config: str | None = ..., schema: None = ..., hint: str = ...) -> Split[dict]: ...
def open_split(dataset: Path, split: str, config: str | None = None, schema: str | None = None, hint: str = "") -> Split[Any]:
    """The split's rows, typed by the record schema they were checked against (`kbench.records`)."""
    config = resolve_config(Path(dataset), config)
    path = split_path(dataset, split, config)
    return Split(dataset=Path(dataset), config=config, name=split, path=path, rows=read_rows(path, schema, hint))


def seeded_sample(rows: list[R], limit: int | None, seed: int) -> list[R]:
    """`limit` rows chosen by `seed` from the rows sorted by id, returned in dataset order."""
    if limit is None or limit >= len(rows):
        return rows
    if limit < 1:
        raise UserError(f"--limit must be >= 1, got {limit}")
    order = sorted(range(len(rows)), key=lambda i: rows[i]["id"])
    chosen = sorted(random.Random(seed).sample(order, limit))
    return [rows[i] for i in chosen]


def split_order(split: str) -> tuple[int, str]:
    return (SPLIT_ORDER.index(split) if split in SPLIT_ORDER else len(SPLIT_ORDER), split)


def dataset_configs(run_dir: str | Path) -> list[dict]:
    """The Hub `configs:` entries for the parquet files under `run_dir/data/<config>/<split>.parquet`."""
    data = Path(run_dir) / "data"
    configs: list[dict[str, Any]] = []
    for folder in sorted(p for p in data.glob("*") if p.is_dir()) if data.is_dir() else []:
        splits = sorted((p.stem for p in folder.glob("*.parquet")), key=split_order)
        if splits:
            configs.append(
                {
                    "config_name": folder.name,
                    "data_files": [{"split": s, "path": f"data/{folder.name}/{s}.parquet"} for s in splits],
                }
            )
    if configs and not any(c["config_name"] == "default" for c in configs):
        configs[0]["default"] = True  # `load_dataset(dir)` without a config name opens this one
    return configs


def dataset_infos(run_dir: str | Path) -> list[dict]:
    """The Hub `dataset_info:` entries: rows and parquet bytes per split of each config.

    Why: `datasets` caches a local folder under its folder name and a hash of this front matter
    (not of the data files), so a rebuild into the same folder would load stale rows. Recording
    the exact row counts and file sizes moves the cache whenever a rebuild changes the data.
    `num_bytes` is the size of the split's parquet file.
    """
    import pyarrow.parquet as pq

    infos = []
    for config in dataset_configs(run_dir):
        splits = []
        for entry in config["data_files"]:
            path = Path(run_dir) / entry["path"]
            splits.append(
                {"name": entry["split"], "num_bytes": path.stat().st_size, "num_examples": pq.read_metadata(path).num_rows}
            )
        size = sum(s["num_bytes"] for s in splits)
        infos.append({"config_name": config["config_name"], "splits": splits, "download_size": size, "dataset_size": size})
    return infos


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """One build per run directory: a second one fails at once with a clear message."""
    lock_path = run_dir / ".kbench" / "lock"
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(lock_path, "a+")
    except OSError as exc:
        raise UserError(f"cannot write to {run_dir}: {exc.strerror or exc}") from exc
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            raise UserError(
                f"another kbench process (pid {holder}) is writing to {run_dir}; wait for it or pick another --out"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        yield
    finally:
        fh.close()
