"""What a stage may know about the run it belongs to."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.errors import UserError
from kbench.paths import default_cache_dir


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

    @property
    def recipe_dir(self) -> Path:
        return self.recipe_path.parent

    def resolve(self, path: str | Path) -> Path:
        """A recipe path, relative to the recipe file's folder (URLs are handled by sources)."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.recipe_dir / p).resolve()

    def output_path(self, relative: str | Path) -> Path:
        """A path inside the run directory; refuses anything that would escape it (`../`, absolute)."""
        rel = Path(relative)
        target = (self.run_dir / rel).resolve()
        if rel.is_absolute() or not target.is_relative_to(self.run_dir.resolve()):
            raise UserError(f"output path {str(relative)!r} is outside the run directory {self.run_dir}")
        return target
