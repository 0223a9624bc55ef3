"""`kbench evaluate truefalse`: LEFT true/false statements, before reading, after reading, open book."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.common import BATCH_SIZE, CONFIG, DEVICE, DTYPE, TRUST_REMOTE_CODE, default_run_dir, open_runner
from kbench.cli.main import evaluate_app


@evaluate_app.command()
def truefalse(
    dataset: Path = typer.Option(..., "--dataset", help="A LEFT dataset folder (pipelines/left-textbook.toml)."),
    model: str = typer.Option(..., "--model", help="smollm2-135m, a .gguf file, a model folder or a hub id."),
    setting: str = typer.Option("prior", "--setting", help="prior | closed-book | open-book"),
    retriever: Optional[str] = typer.Option(None, "--retriever", help="open-book: gold (section paragraph) | sbert (MiniLM top-1)."),
    checkpoint: Optional[Path] = typer.Option(None, "--checkpoint", help="closed-book: the folder written by `kbench read`."),
    split: str = typer.Option("dev", "--split", help="dev (chapters 1-8) | test"),
    config: Optional[str] = CONFIG,
    limit: Optional[int] = typer.Option(None, "--limit", help="The first N statements in dataset order (whole pairs)."),
    max_passage_words: int = typer.Option(150, "--max-passage-words", help="open-book: cut the paragraph to this many words."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default: runs/truefalse-<settings hash>)."),
    batch_size: Optional[int] = BATCH_SIZE,
    dtype: str = DTYPE,
    device: str = DEVICE,
    trust_remote_code: bool = TRUST_REMOTE_CODE,
) -> None:
    """Judge statements true or false; rerunning the same command resumes where it stopped."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from kbench.build.context import default_cache_dir
    from kbench.errors import UserError
    from kbench.evaluate.truefalse import TrueFalseSettings, check_settings, run_truefalse

    if max_passage_words < 1:
        raise UserError(f"--max-passage-words must be >= 1, got {max_passage_words}")
    settings = TrueFalseSettings(setting=setting, retriever=retriever, split=split, config=config, limit=limit,
                                 max_passage_words=max_passage_words)
    check_settings(settings, checkpoint is not None)
    if checkpoint is not None and not checkpoint.is_dir():
        raise UserError(f"--checkpoint {checkpoint}: not a folder (write one with `kbench read`)")
    run_dir = out or default_run_dir("truefalse", dataset.resolve(), model, checkpoint, dtype, repr(settings))
    console = Console(stderr=True)
    options = dict(dtype=dtype, device=device, trust_remote_code=trust_remote_code, batch_size=batch_size)
    _, base_runner = open_runner(model, **options)
    runner, before = base_runner, None
    if checkpoint is not None:
        _, judged_runner = open_runner(str(checkpoint), cache=base_runner.cache, **options)
        runner, before = judged_runner, base_runner

    columns = [TextColumn(f"truefalse {setting}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("statements", total=None)
        results = run_truefalse(runner, dataset, run_dir, settings, cache_dir=default_cache_dir(), base_runner=before,
                                progress=lambda n, total: bar.update(task, advance=n, total=total))

    overall = results["overall"]
    line = (f"{results['model']['name']} {setting}{' / ' + retriever if retriever else ''} on {split}: "
            f"accuracy {overall['accuracy']:.3f} (uncalibrated {overall['uncalibrated_accuracy']:.3f}, n={overall['n']})")
    if "before_after" in results:
        ba = results["before_after"]
        line += f"; before reading {ba['before_accuracy']:.3f} -> after {ba['after_accuracy']:.3f} (delta {ba['delta']:+.3f})"
    Console().print(line)
    console.print(f"results: {run_dir / 'results.json'}")
