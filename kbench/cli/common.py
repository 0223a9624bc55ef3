"""Options and set-up shared by every `kbench evaluate` command: one definition each.

Typer reads an option's declaration from the parameter default, so the same `typer.Option`
object can serve several commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

DATASET = typer.Option(..., "--dataset", help="A dataset folder built by `kbench build`.")
MODEL = typer.Option(..., "--model", help="smollm2-135m, gemma3-270m, a .gguf file, a model folder or a hub id.")
CONFIG = typer.Option(None, "--config", help="Dataset config (default: 'default' or the only one).")
BATCH_SIZE = typer.Option(None, "--batch-size", help="Rows per forward pass (default: automatic).")
DTYPE = typer.Option("float32", "--dtype", help="float32 | bfloat16 | float16")
DEVICE = typer.Option("cpu", "--device", help="cpu | cuda | cuda:N")
TRUST_REMOTE_CODE = typer.Option(False, "--trust-remote-code", help="Run code shipped with the model (off by default).")


def default_run_dir(task: str, *parts) -> Path:
    """runs/<task>-<hash of everything that names the run>, when --out is not given."""
    from kbench.io import stable_hash

    return Path("runs") / f"{task}-{stable_hash([str(p) for p in parts])[:10]}"


def open_runner(model: str, *, dtype: str, device: str, trust_remote_code: bool, batch_size: Optional[int], cache=None):
    """Load a model and wrap it in the batched runner with the shared result cache: (loaded, runner)."""
    from kbench.build.context import default_cache_dir
    from kbench.errors import UserError
    from kbench.models.loading import load_model
    from kbench.models.result_cache import ResultCache
    from kbench.models.runner import ModelRunner

    if batch_size is not None and batch_size < 1:
        raise UserError(f"--batch-size must be >= 1, got {batch_size}")
    loaded = load_model(model, dtype=dtype, device=device, trust_remote_code=trust_remote_code)
    cache = cache if cache is not None else ResultCache(default_cache_dir() / "results.sqlite")
    return loaded, ModelRunner(loaded, batch_size=batch_size, cache=cache)
