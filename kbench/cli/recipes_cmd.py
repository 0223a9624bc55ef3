"""`kbench recipes`: the recipes `kbench build NAME` knows, one line each."""

from __future__ import annotations

import typer

from kbench.cli.main import app


@app.command()
def recipes() -> None:
    """List the packaged recipes (build one with `kbench build NAME`; a path to any TOML works too)."""
    from kbench.construct.recipe_names import packaged_recipes

    found = packaged_recipes()
    width = max((len(r.name) for r in found), default=0)
    for recipe in found:
        typer.echo(f"{recipe.name:<{width}}  {recipe.description}")
