"""Soft-prompt training data for XTEVAL: (subject, object) pairs per relation.

The training itself (OptiPrompt-style vectors on the frozen model) is
`kbench.tasks.xteval.training.softprompt`, reached through `kbench.models.training.Trainer`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kbench.errors import InputError
from kbench.io import iter_jsonl


def read_split(path: Path) -> list[tuple[str, str]]:
    """(subject label, object label) pairs of one AutoPrompt/OptiPrompt split file."""
    return [(str(r["sub_label"]), str(r["obj_label"])) for _, r in iter_jsonl(path, required=("sub_label", "obj_label"))]


def split_dir_pairs(train_dir: Path) -> Callable[[str], tuple[list, list]]:
    """Training data from a folder of `<relation>/train.jsonl` and `dev.jsonl` (AutoPrompt layout);
    a relation without a folder has none (AutoPrompt has no Google-RE relations)."""
    if not Path(train_dir).is_dir():
        raise InputError(Path(train_dir), "soft-prompt training folder not found")

    def pairs(relation: str) -> tuple[list, list]:
        rel_dir = Path(train_dir) / relation
        if not (rel_dir / "train.jsonl").exists():
            return [], []
        return read_split(rel_dir / "train.jsonl"), read_split(rel_dir / "dev.jsonl")

    return pairs
