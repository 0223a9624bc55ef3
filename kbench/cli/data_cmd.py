"""`kbench data list|root|fetch`: the sources recipes read, and where they come from.

kbench data list
kbench data root            # the data folder `kbench build` would use (stdout) and the rule that chose it (stderr)
kbench data fetch lama_trex lama_google_re lama_trex_autoprompt_splits wikidata_aliases_xfactr
kbench build lama-trex      # finds what `data fetch` wrote into the per-user data folder
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app

data_app = typer.Typer(help="The source data recipes read (`data:` paths): list it, download it.", no_args_is_help=True)
app.add_typer(data_app, name="data")


@data_app.command("list")
def list_sources(
    data_dir: Optional[Path] = typer.Option(
        None, "--data-dir", help="Show which sources this data folder holds (default: as for `kbench build`)."
    ),
) -> None:
    """Each source: its folder name, license, where it comes from, and whether the data folder has it."""
    from rich.console import Console
    from rich.table import Table

    from kbench.construct.data_root import find_data_dir
    from kbench.sources.catalog import catalog

    root, origin = find_data_dir(data_dir)
    table = Table(title=f"data folder: {root} ({origin})" if root else f"no data folder: {origin}")
    for column in ("name", "license", "present", "source", "what"):
        table.add_column(column, overflow="fold")
    for src in catalog().values():
        present = "yes" if root is not None and (root / src.name).exists() else "no"
        table.add_row(src.name, src.reference.license or "?", present, src.homepage, src.title)
    Console(width=max(Console().width, 160)).print(table)


@data_app.command("root")
def root(
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="An explicit data folder (checked, then printed)."),
) -> None:
    """Print the data folder `kbench build` would use (exit 2 when there is none), e.g. for scripts,
    and on stderr the rule that chose it: --data-dir, $KBENCH_DATA_DIR, the per-user data folder
    (when it holds anything), or ../shared/data beside a checkout, in that order."""
    from kbench.construct.data_root import find_data_dir
    from kbench.errors import UserError

    folder, origin = find_data_dir(data_dir)
    if folder is None or not folder.is_dir():
        raise UserError(f"no data folder: {origin if folder is None else f'{folder} (from {origin}) does not exist'}")
    typer.echo(str(folder))
    typer.echo(f"chosen by: {origin}", err=True)


def _fetch_root(explicit: Optional[Path]) -> Path:
    """--to, else $KBENCH_DATA_DIR, else the per-user data folder (which `kbench build` then finds)."""
    from kbench.construct.data_root import ENV_VAR, user_data_root

    if explicit is not None:
        return explicit
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    return user_data_root()


@data_app.command("fetch")
def fetch(
    names: list[str] = typer.Argument(..., help="Source folder names (see `kbench data list`)."),
    to: Optional[Path] = typer.Option(
        None, "--to", help="The data folder (default: $KBENCH_DATA_DIR, else the per-user data folder `kbench build` finds)."
    ),
    mirror: Optional[str] = typer.Option(
        None, "--mirror", help="Fetch https://HOST/PATH from MIRROR/HOST/PATH instead (default: $KBENCH_DATA_MIRROR)."
    ),
    force: bool = typer.Option(
        False, "--force", help="Download folders that are already there again (replaced only when complete)."
    ),
) -> None:
    """Download sources, verify their sha256, unpack them into the data folder (all or nothing per folder)."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    from kbench.sources.fetch_data import MIRROR_ENV, fetch_sources

    console = Console(stderr=True, soft_wrap=True)  # URLs and paths stay on one line, copyable
    root = _fetch_root(to)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), console=console, transient=True
    ) as bar:
        tasks: dict[str, int] = {}

        def on_bytes(url: str, received: int, total: int | None) -> None:
            if url not in tasks:
                tasks[url] = bar.add_task(url.rsplit("/", 1)[-1], total=total)
            bar.update(tasks[url], completed=received)

        written = fetch_sources(
            names, root, mirror=mirror or os.environ.get(MIRROR_ENV) or None, force=force, say=console.print, on_bytes=on_bytes
        )
    from kbench.construct.data_root import find_data_dir

    resolved = root.expanduser().resolve()
    found, _ = find_data_dir()
    flag = "" if found == resolved else f" --data-dir {resolved}"  # the flag only when a build would not find it
    console.print(f"{len(written)} folder(s) written to {resolved}; build with: kbench build RECIPE{flag}")
