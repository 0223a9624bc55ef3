"""`kbench cache info` / `kbench cache clear`: show and empty the result cache of model outputs.

The cache lives in `$KBENCH_CACHE/results.sqlite` (default ~/.cache/kbench); `--cache-dir`
points at another cache folder. Entries are keyed by the code and library versions that made
them, so stale entries are never reused; `clear` only gives their space back.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app

cache_app = typer.Typer(help="Show or empty the result cache of model outputs.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")

CACHE_DIR = typer.Option(None, "--cache-dir", help="The cache folder (default: $KBENCH_CACHE or ~/.cache/kbench).")


def _path(cache_dir: Optional[Path]) -> Path:
    from kbench.errors import UserError
    from kbench.paths import result_cache_path

    path = result_cache_path(cache_dir.expanduser().resolve() if cache_dir else None)
    if path.parent.exists() and not path.parent.is_dir():
        raise UserError(f"--cache-dir {path.parent}: not a folder")
    return path


def _open(cache_dir: Optional[Path]):
    from kbench.models.result_cache import ResultCache

    return ResultCache(_path(cache_dir))


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "unknown"
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


@cache_app.command()
def info(
    cache_dir: Optional[Path] = CACHE_DIR, as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON.")
) -> None:
    """Where the result cache is, how big, and what it holds (rows per method and model)."""
    import json

    if _path(cache_dir).exists():
        cache = _open(cache_dir)
        summary = cache.summary()
        cache.close()
    else:  # nothing cached yet: report it without creating the file
        summary = {
            "path": str(_path(cache_dir)),
            "bytes": 0,
            "rows": 0,
            "by_method": {},
            "by_model": {},
            "oldest": None,
            "newest": None,
        }
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(f"path:    {summary['path']}")
    typer.echo(f"size:    {_size(summary['bytes'])}")
    typer.echo(f"rows:    {summary['rows']}")
    if summary["rows"]:
        typer.echo(f"oldest:  {_when(summary['oldest'])}")
        typer.echo(f"newest:  {_when(summary['newest'])}")
        for title, counts in (("method", summary["by_method"]), ("model", summary["by_model"])):
            typer.echo(f"per {title}:")
            for name, n in counts.items():
                typer.echo(f"  {name}: {n}")


def _confirmed(question: str) -> bool:
    try:
        return typer.confirm(question)
    except typer.Abort:  # no terminal to ask (stdin closed)
        return False


@cache_app.command()
def clear(
    cache_dir: Optional[Path] = CACHE_DIR, yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation.")
) -> None:
    """Delete every cached model output (later runs recompute them)."""
    cache = _open(cache_dir)
    rows = cache.summary()["rows"]
    if rows and not yes and not _confirmed(f"Delete {rows} cached results in {cache.path}?"):
        from kbench.errors import UserError

        cache.close()
        raise UserError("not confirmed, nothing deleted (pass --yes to clear without asking)")
    deleted = cache.clear()
    cache.close()
    typer.echo(f"deleted {deleted} cached results from {cache.path}")
