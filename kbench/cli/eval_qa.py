"""`kbench evaluate qa`: knowledge-update QA (EvolvingQA) -- Unchanged, New, Outdated, Updated."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.common import BATCH_SIZE, CONFIG, DEVICE, DTYPE, TRUST_REMOTE_CODE, default_run_dir, open_runner
from kbench.cli.main import evaluate_app


@evaluate_app.command()
def qa(
    dataset: Path = typer.Option(..., "--dataset", help="An evolving QA dataset folder (pipelines/evolving.toml)."),
    model: str = typer.Option(..., "--model", help="smollm2-135m, a .gguf file, a model folder (e.g. a `kbench read` checkpoint) or a hub id."),
    metric: str = typer.Option("official", "--metric", help="official (EvolvingQA scorer) | card (the evaluation card's variant)"),
    prompt: str = typer.Option("question", "--prompt", help="question | chat (the tokenizer's chat template)"),
    fewshot: int = typer.Option(0, "--fewshot", help="Solved examples from the Unchanged items before each question."),
    config: Optional[str] = CONFIG,
    limit: Optional[int] = typer.Option(None, "--limit", help="Evaluate a seeded sample of N items."),
    seed: int = typer.Option(0, "--seed", help="Seeds the --limit sample."),
    max_new_tokens: int = typer.Option(16, "--max-new-tokens"),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default: runs/qa-<settings hash>)."),
    batch_size: Optional[int] = BATCH_SIZE,
    dtype: str = DTYPE,
    device: str = DEVICE,
    trust_remote_code: bool = TRUST_REMOTE_CODE,
) -> None:
    """Answer the questions greedily and score EM/F1 per slice; rerunning resumes where it stopped."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    from kbench.errors import UserError
    from kbench.evaluate.qa import QASettings, run_qa
    from kbench.metrics.qa import SCORERS

    if metric not in SCORERS:
        raise UserError(f"unknown --metric {metric!r}; choose one of {', '.join(SCORERS)}")
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be >= 1, got {limit}")
    if max_new_tokens < 1:
        raise UserError(f"--max-new-tokens must be >= 1, got {max_new_tokens}")
    if prompt not in ("question", "chat"):
        raise UserError(f"unknown --prompt {prompt!r}; choose question or chat")
    settings = QASettings(metric=metric, prompt=prompt, fewshot=fewshot, config=config, limit=limit, seed=seed, max_new_tokens=max_new_tokens)
    run_dir = out or default_run_dir("qa", dataset.resolve(), model, dtype, repr(settings))
    console = Console(stderr=True)
    loaded, runner = open_runner(model, dtype=dtype, device=device, trust_remote_code=trust_remote_code, batch_size=batch_size)
    with Progress(TextColumn("qa"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console) as bar:
        task = bar.add_task("items", total=None)
        results = run_qa(runner, dataset, run_dir, settings, progress=lambda n, total: bar.update(task, advance=n, total=total))

    table = Table(title=f"{loaded.name} on {dataset.name} ({metric} EM/F1 x100)")
    for column in ("slice", "n", "EM", "F1"):
        table.add_column(column, justify="left" if column == "slice" else "right")
    for name, s in results["splits"].items():
        table.add_row(name, str(s["n"]), "" if s["em"] is None else f"{s['em']:.1f}", "" if s["f1"] is None else f"{s['f1']:.1f}")
    Console().print(table)
    pref = results["edited_preference"]
    if pref["n"]:
        console.print(f"edited items preferring the updated answer (log-likelihood): {pref['prefers_updated']:.3f} of {pref['n']}")
    console.print(f"results: {run_dir / 'results.json'}")
