"""Where kbench keeps its caches. Every layer may import this module (it imports nothing of
kbench), so no layer has to reach into another for a default folder."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """Shared on-disk cache (downloads, SPARQL results, stores, results); `KBENCH_CACHE` overrides it."""
    return Path(os.environ.get("KBENCH_CACHE", Path.home() / ".cache" / "kbench")).expanduser().resolve()


def model_cache_dir() -> Path:
    """Converted model weights; `KBENCH_MODEL_CACHE` overrides it."""
    override = os.environ.get("KBENCH_MODEL_CACHE")
    return Path(override).expanduser().resolve() if override else default_cache_dir() / "models"


def result_cache_path(cache_dir: Path | None = None) -> Path:
    """The result cache of model outputs: `results.sqlite` in the cache folder."""
    return (cache_dir or default_cache_dir()) / "results.sqlite"
