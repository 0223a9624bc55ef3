"""Each relation's answer space: the candidates every item of the relation is scored against.

By default, the distinct objects of the relation's rows in the evaluated split (all of them, before
`--limit` draws its sample), in dataset order: what lm-pub-quiz derives from an instance table
without answer-space metadata. `--answer-space FILE` gives them instead, as JSON:

    {"P19": ["Paris", "Warsaw", ...], ...}                        # relation -> labels
    {"P19": {"answer_space_labels": [...], "templates": [...]}}   # lm-pub-quiz's metadata_relations.json

A label listed twice is scored once (its first place counts); every evaluated item's gold object
must be in its relation's space.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from kbench.errors import InputError, UserError
from kbench.records import Question


def from_rows(rows: Sequence[Question]) -> dict[str, tuple[str, ...]]:
    """relation -> its distinct objects, in the order the rows first name them."""
    spaces: dict[str, dict[str, None]] = {}
    for row in rows:
        spaces.setdefault(row["relation"], {})[row["object"]] = None
    return {relation: tuple(labels) for relation, labels in spaces.items()}


def from_file(path: Path) -> dict[str, tuple[str, ...]]:
    """relation -> labels from a JSON file (either form in the module docstring)."""
    if not path.is_file():
        raise UserError(f"--answer-space {path}: no such file")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise InputError(path, "expected an object: relation -> list of labels")
    spaces = {}
    for relation, entry in document.items():
        labels = entry.get("answer_space_labels") if isinstance(entry, dict) else entry
        if not isinstance(labels, list) or not labels or not all(isinstance(x, str) and x for x in labels):
            raise InputError(path, "expected a non-empty list of non-empty strings", key=relation)
        spaces[relation] = tuple(dict.fromkeys(labels))
    return spaces


def check_items(rows: Sequence[Question], spaces: dict[str, tuple[str, ...]], where: str, split: str) -> None:
    """Every item's template has a [Y] to put candidates in, its relation has a space (`where`
    names it) and its gold object is in it."""
    for row in rows:
        if "[Y]" not in row["template"]:
            raise UserError(f"{split}: the template {row['template']!r} of item {row['id']} has no [Y] for the candidates")
        space = spaces.get(row["relation"])
        if space is None:
            raise UserError(f"{where}: no answer space for relation {row['relation']!r} (item {row['id']})")
        if row["object"] not in space:
            raise UserError(
                f"{where}: the gold object {row['object']!r} of item {row['id']} is not in the answer space of {row['relation']}"
            )
