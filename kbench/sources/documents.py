"""Document collections on disk: one `.jsonl` file, or a folder of them (read in sorted order).

Each line is a JSON object with at least `title` and `text`; the REBEL dataset format adds `uri`
(the article's Q-id), `entities` and `triples`. Errors name the file and line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kbench.errors import InputError
from kbench.io import iter_jsonl


def document_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(path.rglob("*.jsonl"))
        if not files:
            raise InputError(path, "folder holds no .jsonl documents")
        return files
    if not path.exists():
        raise InputError(path, "documents file or folder not found")
    return [path]


def iter_documents(path: Path, required: tuple[str, ...] = ("title", "text")) -> Iterator[tuple[Path, int, dict]]:
    """(file, line number, document) for every document under `path`."""
    for file in document_files(path):
        for lineno, doc in iter_jsonl(file, required=required):
            yield file, lineno, doc
