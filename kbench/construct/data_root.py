"""The data root: where a recipe's `data:` inputs live.

A recipe names a source file by its place under the data root, never by a path written for one
machine:

    trex = "data:lama_trex/TREx"          # <data root>/lama_trex/TREx
    mapping = "mappings/maple-domains.toml"   # no prefix: relative to the recipe file

After `data:` comes a relative POSIX path (no leading `/`, no `..`, no backslashes); its first
part is a source folder (`kbench data list` names them, `kbench data fetch NAME` downloads one).
The data root is the first of these rules that gives one (`kbench data root` prints the folder
and the rule):

  1. `kbench build --data-dir DIR`;
  2. the environment variable `KBENCH_DATA_DIR`;
  3. the per-user data folder, when it holds anything: platformdirs' `user_data_dir("kbench")`
     (Linux: `$XDG_DATA_HOME/kbench`, else ~/.local/share/kbench; macOS: ~/Library/Application
     Support/kbench; Windows: %LOCALAPPDATA%\\kbench). `kbench data fetch` writes there by default,
     so a pip user's `kbench data fetch NAME` then `kbench build RECIPE` just works;
  4. `../shared/data` beside the repository kbench runs from, when that exists (for a clone of a
     local checkout: beside that checkout); an installed wheel has no such fallback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from kbench.errors import UserError

PREFIX = "data:"
ENV_VAR = "KBENCH_DATA_DIR"


def is_data_ref(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def parse_data_ref(value: str) -> PurePosixPath:
    """The relative path after `data:`; raises `ValueError` with the reason when it is not one."""
    rest = value[len(PREFIX) :]
    if not rest.strip():
        raise ValueError("`data:` needs a path after it, e.g. data:lama_trex/TREx")
    if "\\" in rest:
        raise ValueError("use forward slashes after `data:`")
    path = PurePosixPath(rest)
    if path.is_absolute() or ".." in path.parts:
        raise ValueError("the path after `data:` must stay inside the data root (no leading '/', no '..')")
    return path


def iter_data_refs(value: Any, key: str) -> Iterator[tuple[str, str]]:
    """(key, value) of every `data:` string inside a recipe value (tables and arrays included)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from iter_data_refs(v, f"{key}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from iter_data_refs(v, f"{key}[{i}]")
    elif is_data_ref(value):
        yield key, value


def old_style_hint(value: Any) -> str | None:
    """The `data:` spelling of a pre-`data:` recipe path such as `../../shared/data/lama_trex`."""
    if not isinstance(value, str) or not value.startswith("../"):
        return None
    marker = "/shared/data/"
    if marker not in value:
        return None
    return PREFIX + value.split(marker, 1)[1]


def user_data_root() -> Path:
    """The per-user data folder (rule 3): where `kbench data fetch` writes without --to."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("kbench", appauthor=False))


def repository_default(checkout: Path | None = None) -> Path | None:
    """`../shared/data` beside the checkout kbench is imported from (None for an installed wheel).
    A clone of a local checkout (`git clone /work/main /tmp/fresh`) has no data beside it; it
    uses the data beside the checkout it was cloned from when that exists."""
    checkout = checkout or Path(__file__).resolve().parents[2]
    if not (checkout / "pyproject.toml").is_file():
        return None
    beside = checkout.parent / "shared" / "data"
    if beside.is_dir():
        return beside
    origin = _local_origin(checkout)  # only now: it runs git
    if origin is not None and (origin.parent / "shared" / "data").is_dir():
        return origin.parent / "shared" / "data"
    return beside


def _local_origin(checkout: Path) -> Path | None:
    """The checkout this one was cloned from, when its `origin` remote is a local folder."""
    import subprocess

    try:
        url = subprocess.run(
            ["git", "-C", str(checkout), "config", "--get", "remote.origin.url"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    path = Path(url.removeprefix("file://")) if url and "://" not in url.removeprefix("file://") else None
    return path.resolve() if path is not None and path.is_dir() else None


def find_data_dir(explicit: Path | None = None) -> tuple[Path | None, str]:
    """The data root and where it was chosen from; (None, reason) when there is none."""
    if explicit is not None:
        return Path(explicit).expanduser().resolve(), "--data-dir"
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser().resolve(), ENV_VAR
    user = user_data_root()
    if user.is_dir() and any(user.iterdir()):
        return user.resolve(), "the per-user data folder (where `kbench data fetch` writes by default)"
    default = repository_default()
    if default is not None and default.is_dir():
        return default.resolve(), "default (../shared/data beside the repository)"
    where = f" ({default} does not exist)" if default is not None else ""
    return None, (
        f"no --data-dir, no {ENV_VAR}, nothing in the per-user data folder {user}, "
        f"and no ../shared/data beside the repository{where}"
    )


def check_data_root(recipe_path: Path, refs: list[tuple[str, str]], explicit: Path | None) -> Path | None:
    """The data root for a recipe whose `data:` inputs are `refs`; a clear error if it is missing.

    A recipe without `data:` inputs needs no data root (None unless one is found anyway).
    """
    data_dir, origin = find_data_dir(explicit)
    if not refs:
        return data_dir if data_dir is not None and data_dir.is_dir() else None
    folders = sorted({parse_data_ref(value).parts[0] for _, value in refs})
    fetch = f"kbench data fetch {' '.join(folders)} --to DIR"
    if data_dir is None:
        raise UserError(
            f"{recipe_path}: the recipe reads {refs[0][1]!r} ([{refs[0][0]}]) but there is no data "
            f"folder: {origin}. Download the sources with `{fetch}`, then pass "
            f"`--data-dir DIR` or set {ENV_VAR}=DIR."
        )
    if not data_dir.is_dir():
        raise UserError(
            f"{recipe_path}: the data folder {data_dir} (from {origin}) does not exist. "
            f"Download the sources into it with `kbench data fetch {' '.join(folders)} --to {data_dir}`."
        )
    missing = [f for f in folders if not (data_dir / f).exists()]
    if missing:
        raise UserError(
            f"{recipe_path}: the data folder {data_dir} (from {origin}) lacks "
            f"{', '.join(missing)}. Download with `kbench data fetch {' '.join(missing)} --to {data_dir}`."
        )
    return data_dir
