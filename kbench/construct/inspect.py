"""`kbench inspect DIR`: what a built dataset holds and how it got there.

Prints rich tables: the stages (rows in / out, drops by reason) from `stats.json`, then rows per
split, per relation (by split), per frequency bin (by split) and, when the dataset has a `domain`
column, per domain. Reads only `stats.json` and the parquet files named by the dataset's
configs. A folder that is missing or was not built by `kbench build` is a `UserError`.
"""

from __future__ import annotations

import json
from pathlib import Path

from kbench.errors import UserError


def _load(run_dir: Path):
    import polars as pl

    from kbench.dataset import dataset_configs

    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a folder")
    stats_path = run_dir / "stats.json"
    if not stats_path.is_file():
        raise UserError(f"{run_dir} is not a kbench dataset folder (no stats.json); build one with `kbench build`")
    try:
        stats = json.loads(stats_path.read_text(encoding="utf-8"))
        stages = stats["stages"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise UserError(f"{stats_path} is damaged ({exc}); rebuild the dataset") from exc
    frames = []
    for config in dataset_configs(run_dir):
        for entry in config["data_files"]:
            try:
                frame = pl.read_parquet(run_dir / entry["path"])
            except Exception as exc:  # polars raises several types for unreadable files
                raise UserError(f"{run_dir / entry['path']} is not a readable parquet file ({exc})") from exc
            frames.append(
                frame.with_columns(pl.lit(config["config_name"]).alias("__config"), pl.lit(entry["split"]).alias("__split"))
            )
    data = pl.concat(frames, how="diagonal_relaxed") if frames else None
    return stats, stages, data


def _crosstab(data, column: str, title: str, label_column: str | None = None, order: tuple[str, ...] = ()):
    """A rich table of row counts: one row per value of `column`, one count column per split."""
    import polars as pl
    from rich.table import Table

    splits = data["__split"].unique(maintain_order=True).to_list()
    keys = [column] + ([label_column] if label_column else [])
    counts = data.group_by(keys + ["__split"]).len()
    table = Table(title=title)
    for key in keys:
        table.add_column(key)
    for split in splits:
        table.add_column(split, justify="right")
    table.add_column("total", justify="right")
    totals = counts.group_by(keys).agg(pl.col("len").sum().alias("total")).sort(column, nulls_last=True)
    rows = sorted(totals.iter_rows(named=True), key=lambda r: order.index(r[column]) if r[column] in order else len(order))
    for row in rows:
        cells = [str(row[k]) if row[k] is not None else "(none)" for k in keys]
        match = counts.filter(pl.all_horizontal([pl.col(k).is_null() if row[k] is None else pl.col(k) == row[k] for k in keys]))
        by_split = dict(zip(match["__split"].to_list(), match["len"].to_list()))
        table.add_row(*cells, *[f"{by_split.get(s, 0):,}" for s in splits], f"{row['total']:,}")
    return table


def inspect_dataset(run_dir: str | Path, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    run_dir = Path(run_dir)
    stats, stages, data = _load(run_dir)

    console.print(
        f"[bold]{stats.get('dataset', '?')}[/bold] {stats.get('version', '')}  "
        f"config hash {str(stats.get('config_hash', ''))[:12]}  final rows {stats.get('final_rows', 0):,}"
    )
    table = Table(title="stages")
    for name, justify in (
        ("#", "right"),
        ("id", "left"),
        ("stage", "left"),
        ("rows in", "right"),
        ("rows out", "right"),
        ("dropped", "right"),
        ("drops by reason", "left"),
    ):
        table.add_column(name, justify=justify)
    for i, stage in enumerate(stages, start=1):
        reasons = ", ".join(f"{r}: {n:,}" for r, n in sorted(stage.get("dropped", {}).items()))
        table.add_row(
            str(i),
            stage["id"],
            stage["stage"],
            f"{stage['rows_in']:,}",
            f"{stage['rows_out']:,}",
            f"{stage.get('dropped_total', 0):,}",
            reasons or "-",
        )
    console.print(table)

    if data is None:
        console.print("no dataset files under data/ (the recipe has no write_dataset stage?)")
        return
    splits = Table(title="splits")
    for name in ("config", "split", "rows"):
        splits.add_column(name, justify="right" if name == "rows" else "left")
    for config, split, n in data.group_by(["__config", "__split"], maintain_order=True).len().iter_rows():
        splits.add_row(config, split, f"{n:,}")
    console.print(splits)
    if "relation" in data.columns:
        label = "relation_label" if "relation_label" in data.columns else None
        console.print(_crosstab(data, "relation", "rows per relation", label))
    if "frequency_bin" in data.columns:
        console.print(_crosstab(data, "frequency_bin", "rows per frequency bin", order=("head", "torso", "tail")))
    if "domain" in data.columns:
        console.print(_crosstab(data, "domain", "rows per domain"))
