"""`kbench build` and `kbench inspect`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app


@app.command()
def build(
    recipe: str = typer.Argument(..., help="A packaged recipe's name (see `kbench recipes`), or a recipe TOML file."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default: runs/<dataset name>)."),
    set_: list[str] = typer.Option([], "--set", help="Override a recipe value: STAGE_ID.KEY=VALUE or pipeline.KEY=VALUE."),
    sparql_endpoint: Optional[str] = typer.Option(
        None, "--sparql-endpoint", help="Query this SPARQL endpoint instead of the embedded store."
    ),
    data_dir: Optional[Path] = typer.Option(
        None,
        "--data-dir",
        help="Where the recipe's `data:` inputs live (default: $KBENCH_DATA_DIR, else the per-user data folder "
        "`kbench data fetch` fills, else ../shared/data beside a checkout; `kbench data root` says which).",
    ),
    executor: str = typer.Option(
        "local", "--executor", help="Where row-wise stages run: local (this process) or ray (shards on a Ray cluster)."
    ),
    ray_address: Optional[str] = typer.Option(
        None,
        "--ray-address",
        help="Ray cluster to join (e.g. 10.0.0.5:6379 or auto); default: a Ray instance started for this build.",
    ),
    workers: Optional[int] = typer.Option(
        None, "--workers", help="With --executor ray: at most this many shards at once (default: every CPU of the cluster)."
    ),
    shard_rows: Optional[int] = typer.Option(
        None, "--shard-rows", help="With --executor ray: rows per shard (default 100000); the output does not depend on it."
    ),
    judge_model: Optional[str] = typer.Option(
        None, "--judge-model", help="Run the LLM-judge stages (judge_domain, judge_single_answer) with this model; off without."
    ),
    device: Optional[str] = typer.Option(
        None, "--device", help="Device of model stages (extract_rebel): cpu, cuda, auto; overrides the recipe's."
    ),
) -> None:
    """Build a dataset from a recipe. Rerunning the same command resumes finished stages."""
    from rich.console import Console

    from kbench.api import build as build_dataset
    from kbench.io import read_json
    from kbench.protocol import describe, read_protocol

    console = Console(stderr=True)

    def progress(i: int, n: int, report) -> None:
        how = "reused" if report.reused else f"{report.seconds:.1f}s"
        drops = sum(report.dropped.values())
        console.print(
            f"[{i + 1}/{n}] {report.id:<18} {report.rows_in:>8,} → {report.rows_out:>8,} rows  ({drops:,} dropped, {how})"
        )

    built = build_dataset(
        recipe,
        out=out,
        data_dir=data_dir,
        overrides=set_,
        sparql_endpoint=sparql_endpoint,
        device=device,
        judge_model=judge_model,
        executor=executor,
        ray_address=ray_address,
        workers=workers,
        shard_rows=shard_rows,
        on_stage=progress,
    )
    console.print(f"dataset written to {built.path} (config hash {built.config_hash[:12]})")
    protocol = read_protocol(read_json(built.path / "manifest.json"), str(built.path / "manifest.json"))
    console.print(f"protocol: {describe(protocol)} (README.md, manifest.json `protocol`)")


@app.command()
def inspect(run_dir: Path = typer.Argument(..., help="A built dataset folder.")) -> None:
    """Print a built dataset's stats: rows per stage, drops by reason, per-relation and per-bin counts."""
    from kbench.construct.inspect import inspect_dataset

    inspect_dataset(run_dir)
