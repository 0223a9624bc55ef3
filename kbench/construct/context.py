"""What a stage may know about the run it belongs to."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.construct.data_root import ENV_VAR, PREFIX, is_data_ref, parse_data_ref
from kbench.errors import UserError
from kbench.paths import default_cache_dir
from kbench.protocol import ProtocolRecord


@dataclass
class StageContext:
    recipe_path: Path
    run_dir: Path
    seed: int
    cache_dir: Path = field(default_factory=default_cache_dir)
    #: Run-wide options from the command line (e.g. `sparql_endpoint`), never part of a recipe.
    options: dict[str, Any] = field(default_factory=dict)
    dataset_name: str = "dataset"
    dataset_version: str = "0"
    config_name: str = "default"
    #: The data root that `data:` paths resolve against (kbench/construct/data_root.py); None: none set.
    data_dir: Path | None = None
    #: The dataset's protocol block so far: the recipe's procedure and the departures of the stages
    #: before this one (`write_dataset` prints it in the card it writes).
    protocol: ProtocolRecord | None = None

    @property
    def recipe_dir(self) -> Path:
        return self.recipe_path.parent

    def resolve(self, path: str | Path) -> Path:
        """A recipe path: `data:X` under the data root, else relative to the recipe file's folder
        (URLs are handled by `materialize`)."""
        if is_data_ref(path):
            if self.data_dir is None:
                raise UserError(f"{self.recipe_path}: {path!r} needs a data folder: pass --data-dir DIR or set {ENV_VAR}")
            return self.data_dir / parse_data_ref(str(path))
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.recipe_dir / p).resolve()

    def materialize(self, location: str, sha256: str | None, *, key: str) -> Path:
        """A recipe location that may also be an http(s) URL (downloaded, verified, unpacked)."""
        from kbench.sources.download import is_url, materialize

        local = location if is_url(location) else str(self.resolve(location))
        return materialize(local, sha256, self.cache_dir, key=key)

    def display_path(self, path: Path) -> str:
        """How the manifest names an input: `data:...` under the data root, else relative to the recipe."""
        import os

        if self.data_dir is not None and path.is_relative_to(self.data_dir):
            return PREFIX + path.relative_to(self.data_dir).as_posix()
        try:
            return os.path.relpath(path, self.recipe_dir)
        except ValueError:
            return str(path)

    def output_path(self, relative: str | Path) -> Path:
        """A path inside the run directory; refuses anything that would escape it (`../`, absolute)."""
        rel = Path(relative)
        target = (self.run_dir / rel).resolve()
        if rel.is_absolute() or not target.is_relative_to(self.run_dir.resolve()):
            raise UserError(f"output path {str(relative)!r} is outside the run directory {self.run_dir}")
        return target
