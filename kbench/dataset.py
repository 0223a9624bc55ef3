"""Open a dataset folder built by `kbench build`: the one place that knows its layout.

    DIR/data/<config>/<split>.parquet     the splits (`write_dataset`)
    DIR/corpus/...                        side files some families carry (LEFT's book text)

`open_split(DIR, split, config, schema="question.v1.json")` returns a `Split`: its file, sha256
and rows, with the columns checked against the record schema's `required` list (a missing column
is an `InputError` naming the file and the schema). `seeded_sample` draws `--limit` items the
same way for every task.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from kbench.errors import InputError, UserError


@dataclass(frozen=True)
class Split:
    dataset: Path
    config: str
    name: str
    path: Path
    rows: list[dict] = field(repr=False)

    @cached_property
    def sha256(self) -> str:
        from kbench.io import sha256_file

        return sha256_file(self.path)

    def describe(self) -> dict:
        """The `dataset` block of a results envelope."""
        return {"path": str(self.dataset), "config": self.config, "split": self.name, "file": str(self.path),
                "sha256": self.sha256}


def configs(dataset: Path) -> list[str]:
    data = Path(dataset) / "data"
    found = sorted(p.name for p in data.glob("*") if p.is_dir()) if data.is_dir() else []
    if not found:
        raise UserError(f"{dataset} is not a dataset folder (no data/<config>/<split>.parquet); build one with `kbench build`")
    return found


def split_names(dataset: Path, config: str | None = None) -> list[str]:
    config = resolve_config(dataset, config)
    return sorted(p.stem for p in (Path(dataset) / "data" / config).glob("*.parquet"))


def resolve_config(dataset: Path, config: str | None) -> str:
    known = configs(dataset)
    if config is None:
        return "default" if "default" in known else known[0]
    if config not in known:
        raise UserError(f"{dataset}: no config {config!r}; configs: {', '.join(known)}")
    return config


def split_path(dataset: Path, split: str, config: str | None = None) -> Path:
    config = resolve_config(dataset, config)
    path = Path(dataset) / "data" / config / f"{split}.parquet"
    if not path.is_file():
        raise UserError(f"{dataset}: config {config!r} has no split {split!r}; splits: {', '.join(split_names(dataset, config))}")
    return path


def has_split(dataset: Path, split: str, config: str | None = None) -> bool:
    try:
        split_path(dataset, split, config)
    except UserError:
        return False
    return True


def required_columns(schema_name: str) -> list[str]:
    from kbench.io import load_schema

    return list(load_schema(schema_name).get("required", []))


def read_rows(path: Path, schema_name: str | None = None, hint: str = "") -> list[dict]:
    """All rows of a split file; with `schema_name`, its required columns must be present."""
    import polars as pl

    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # polars raises several error types for a damaged file
        raise InputError(path, f"cannot read parquet: {exc}") from exc
    if schema_name is not None:
        missing = [c for c in required_columns(schema_name) if c not in frame.columns]
        if missing:
            raise InputError(path, f"missing column(s) {', '.join(missing)} (see schemas/{schema_name}){hint}")
    return frame.to_dicts()


def open_split(dataset: Path, split: str, config: str | None = None, schema: str | None = None, hint: str = "") -> Split:
    config = resolve_config(Path(dataset), config)
    path = split_path(dataset, split, config)
    return Split(dataset=Path(dataset), config=config, name=split, path=path, rows=read_rows(path, schema, hint))


def seeded_sample(rows: list[dict], limit: int | None, seed: int) -> list[dict]:
    """`limit` rows chosen by `seed` from the rows sorted by id, returned in dataset order."""
    if limit is None or limit >= len(rows):
        return rows
    if limit < 1:
        raise UserError(f"--limit must be >= 1, got {limit}")
    order = sorted(range(len(rows)), key=lambda i: rows[i]["id"])
    chosen = sorted(random.Random(seed).sample(order, limit))
    return [rows[i] for i in chosen]
