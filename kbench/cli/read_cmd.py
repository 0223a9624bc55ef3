"""`kbench read`: continued pre-training on a text folder or paragraphs file (closed-book reading)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app


@app.command()
def read(
    model: str = typer.Option(..., "--model", help="The causal LM to train: smollm2-135m, a .gguf file or a model folder."),
    text: Path = typer.Option(..., "--text", help="A folder of .txt/.md/.jsonl files or one .jsonl file (its `text` field)."),
    out: Path = typer.Option(..., "--out", help="Checkpoint folder; `--model OUT` / `--checkpoint OUT` load it."),
    epochs: int = typer.Option(1, "--epochs"),
    lr: float = typer.Option(5e-5, "--lr"),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Stop after this many optimizer steps in all."),
    seq_len: int = typer.Option(256, "--seq-len", help="Tokens per training block."),
    batch_size: int = typer.Option(8, "--batch-size", help="Blocks per optimizer step."),
    seed: int = typer.Option(0, "--seed", help="Seeds the block order."),
    only: list[str] = typer.Option([], "--only", help="JSONL only: keep lines with FIELD=VALUE, e.g. --only split=dev."),
) -> None:
    """Continue pre-training a model on text; rerunning resumes after the last finished epoch."""
    from rich.console import Console

    from kbench.errors import UserError
    from kbench.read import ReadSettings, read_text

    filters = {}
    for item in only:
        if "=" not in item:
            raise UserError(f"--only {item!r}: expected FIELD=VALUE, e.g. split=dev")
        key, value = item.split("=", 1)
        filters[key.strip()] = value.strip()
    settings = ReadSettings(
        model=model,
        text=str(text),
        out=str(out),
        epochs=epochs,
        lr=lr,
        max_steps=max_steps,
        seq_len=seq_len,
        batch_size=batch_size,
        seed=seed,
        only=filters,
    )
    record = read_text(settings)  # shows its own progress (steps, ETA) and logs each epoch's loss
    console = Console(stderr=True)
    losses = ", ".join(f"{x:.3f}" for x in record["epoch_losses"])
    console.print(
        f"checkpoint written to {out} ({record['steps']} steps on {record['blocks']} blocks; mean loss per epoch: {losses})"
    )
