"""`kbench evaluate xteval`: the acquisition-utilization gap (extraction -> retrieval -> gaps)."""

from __future__ import annotations

from typing import Optional

import typer

from kbench.cli.common import evaluate_command


@evaluate_command(
    "xteval",
    prefixes={"finetune": "", "softprompt": "prompt-"},
    renames={"finetune.batch_size": "--train-batch-size", "softprompt.max_train_facts": "--prompt-train-limit"},
    comma=("template_variants",),
)
def xteval(
    values: dict,
    seeds: Optional[int] = typer.Option(
        None, "--seeds", help="Seeds per level: extraction x split x fine-tune (paper: 3 -> 27 runs); each --*-seeds wins."
    ),
) -> dict:
    """Measure the acquisition-utilization gap (XTEVAL): acc(D), downstream retrieval, Gap 1 and Gap 2.
    Rerunning the same command resumes; a rerun with more --seeds or --setting both in a new --out starts over.
    --epochs also sets the soft-prompt epochs unless --prompt-epochs is given.

    Multi-GPU: `accelerate launch -m kbench evaluate xteval ... --device cuda` fine-tunes with DDP and splits the
    retrieval test between processes; on CPUs, ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu ..."""
    return values | ({"seeds": seeds} if seeds is not None else {})  # XtevalSettings expands it
