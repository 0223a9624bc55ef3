"""`kbench build` and `kbench inspect`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app


@app.command()
def build(
    recipe: Path = typer.Argument(..., help="A pipeline recipe (TOML), e.g. pipelines/lama-trex.toml."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default: runs/<dataset name>)."),
    set_: list[str] = typer.Option([], "--set", help="Override a recipe value: STAGE_ID.KEY=VALUE or pipeline.KEY=VALUE."),
    sparql_endpoint: Optional[str] = typer.Option(
        None, "--sparql-endpoint", help="Query this SPARQL endpoint instead of the embedded store."
    ),
    data_dir: Optional[Path] = typer.Option(
        None,
        "--data-dir",
        help="Where the recipe's `data:` inputs live (default: $KBENCH_DATA_DIR, else ../shared/data beside the repository).",
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

    from kbench.construct.executors import make_executor
    from kbench.construct.recipe import load_recipe
    from kbench.construct.runner import run_recipe

    console = Console(stderr=True)
    parsed = load_recipe(recipe, set_)
    run_dir = out or Path("runs") / parsed.header.name
    options = {"sparql_endpoint": sparql_endpoint} if sparql_endpoint else {}
    if device:
        options["device"] = device
    if judge_model:
        options["judge_model"] = judge_model

    def progress(i: int, n: int, report) -> None:
        how = "reused" if report.reused else f"{report.seconds:.1f}s"
        drops = sum(report.dropped.values())
        console.print(
            f"[{i + 1}/{n}] {report.id:<18} {report.rows_in:>8,} → {report.rows_out:>8,} rows  ({drops:,} dropped, {how})"
        )

    runner = make_executor(executor, ray_address=ray_address, workers=workers, shard_rows=shard_rows)
    try:
        result = run_recipe(parsed, run_dir, options=options, data_dir=data_dir, on_stage=progress, executor=runner)
    finally:
        runner.close()
    console.print(f"dataset written to {result.run_dir} (config hash {result.config_hash[:12]})")


@app.command()
def inspect(run_dir: Path = typer.Argument(..., help="A built dataset folder.")) -> None:
    """Print a built dataset's stats: rows per stage, drops by reason, per-relation and per-bin counts."""
    from kbench.construct.inspect import inspect_dataset

    inspect_dataset(run_dir)
