"""Recipes addressable by name: `kbench build lama` reads the recipe shipped inside the package.

The package's `recipes/` is a link to the repository's `pipelines/` (the one place recipes are
edited); a wheel carries the files themselves, `mappings/` included, so a recipe's paths relative
to its own file resolve the same from a checkout and from an installed wheel.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from kbench.errors import UserError

RECIPE_DIR = (Path(__file__).resolve().parent.parent / "recipes").resolve()  # in a checkout: pipelines/


@dataclass(frozen=True)
class PackagedRecipe:
    name: str  # what `kbench build NAME` takes: the file's stem
    path: Path
    description: str


def packaged_recipes() -> list[PackagedRecipe]:
    """The recipes shipped with kbench, by name."""
    found = []
    for path in sorted(RECIPE_DIR.glob("*.toml"), key=lambda p: p.stem):
        header = tomllib.loads(path.read_text(encoding="utf-8")).get("pipeline", {})
        found.append(PackagedRecipe(path.stem, path, str(header.get("description", "")).strip()))
    return found


def resolve_recipe(recipe: str | Path) -> Path:
    """A recipe file: `recipe` itself when it is a file, else the packaged recipe of that name."""
    path = Path(recipe)
    if path.is_file():
        return path
    names = {r.name: r.path for r in packaged_recipes()}
    if str(recipe) in names:
        return names[str(recipe)]
    if path.suffix == ".toml" or len(path.parts) > 1:
        raise UserError(f"{recipe}: recipe file not found")
    raise UserError(f"{recipe!r} is neither a recipe file nor a packaged recipe; packaged: {', '.join(sorted(names))}")
