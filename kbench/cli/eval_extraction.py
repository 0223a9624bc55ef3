"""`kbench evaluate extraction`: which facts of a dataset does a model know?"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.common import BATCH_SIZE, CONFIG, DATASET, DEVICE, DTYPE, MODEL, TRUST_REMOTE_CODE, default_run_dir, open_runner
from kbench.cli.main import evaluate_app


@evaluate_app.command()
def extraction(
    dataset: Path = DATASET,
    model: str = MODEL,
    split: str = typer.Option("test", "--split"),
    config: Optional[str] = CONFIG,
    limit: Optional[int] = typer.Option(None, "--limit", help="Evaluate a seeded sample of N items."),
    prompt: str = typer.Option("cloze", "--prompt", help="cloze | question | chat"),
    fewshot: int = typer.Option(0, "--fewshot", help="Solved examples from the train split before each item."),
    seed: int = typer.Option(0, "--seed", help="Seeds the --limit sample and the few-shot examples."),
    protocol: str = typer.Option("maple", "--protocol", help="maple (generate + match) | lama (single-token P@1)."),
    common_vocab: Optional[Path] = typer.Option(None, "--common-vocab", help="lama protocol: restrict objects and ranks to this word list."),
    case_sensitive: bool = typer.Option(False, "--case-sensitive", help="MAPLE matching keeps case."),
    max_new_tokens: int = typer.Option(16, "--max-new-tokens"),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default: runs/extraction-<settings hash>)."),
    batch_size: Optional[int] = BATCH_SIZE,
    dtype: str = DTYPE,
    device: str = DEVICE,
    trust_remote_code: bool = TRUST_REMOTE_CODE,
) -> None:
    """Probe a model on a dataset split; rerunning the same command resumes where it stopped."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    from kbench.errors import UserError
    from kbench.evaluate.extraction import ExtractionSettings, run_extraction

    if max_new_tokens < 1:
        raise UserError(f"--max-new-tokens must be >= 1, got {max_new_tokens}")
    settings = ExtractionSettings(split=split, config=config, limit=limit, prompt=prompt, fewshot=fewshot, seed=seed,
                                  protocol=protocol, common_vocab=str(common_vocab) if common_vocab else None,
                                  case_sensitive=case_sensitive, max_new_tokens=max_new_tokens)
    run_dir = out or default_run_dir("extraction", dataset.resolve(), model, dtype, repr(settings))
    console = Console(stderr=True)
    loaded, runner = open_runner(model, dtype=dtype, device=device, trust_remote_code=trust_remote_code, batch_size=batch_size)

    columns = [TextColumn("extraction"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("items", total=None)

        def advance(n: int, total: int) -> None:
            bar.update(task, advance=n, total=total)

        results = run_extraction(loaded, runner, dataset, run_dir, settings, progress=advance)

    table = Table(title=f"{loaded.name} on {dataset.name}/{split} ({settings.protocol}, {settings.prompt} prompt)")
    for column in ("slice", "n", "MAPLE acc", "exact acc", "rank-1 acc", "LAMA P@1"):
        table.add_column(column, justify="left" if column == "slice" else "right")

    def add(name: str, s: dict) -> None:
        p_at_1 = f"{s['lama_p_at_1']:.3f}" if "lama_p_at_1" in s else ""
        table.add_row(name, str(s["n"]), f"{s['maple_accuracy']:.3f}", f"{s['exact_accuracy']:.3f}", f"{s['rank1_accuracy']:.3f}", p_at_1)

    add("overall", results["overall"])
    for name, summary in results["per_frequency_bin"].items():
        add(f"bin: {name}", summary)
    Console().print(table)
    console.print(f"known facts: {results['known_facts']['count']} → {run_dir / 'known_facts.parquet'}; "
                  f"results: {run_dir / 'results.json'}")
