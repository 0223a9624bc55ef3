"""Stage `attach_aliases`: add entity names from a Q-id -> names table.

Input table format (X-FACTR's `TREx_en.txt`): UTF-8 text, one entity per line, tab separated;
column 1 is the Wikidata Q-id, the other columns are its English label and aliases (the label
is not marked). Blank lines are skipped; any other malformed line is an `InputError` naming
the file and line. A Q-id listed twice has its names merged.

Contract: `subject_aliases` / `object_aliases` (created when missing) become the union of the
aliases already in the row and the names of `subject_id` / `object_id` in the table, without
the row's own label (`subject` / `object`), deduplicated and sorted. Rows are never dropped and
keep their order; an id missing from the table (or null) just adds nothing. Row-wise: the names
table is read once per run and each row looks up its own ids.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Optional

from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage
from kbench.construct.stages.load_lama import QID
from kbench.errors import InputError


def read_alias_table(path: Path) -> dict[str, list[str]]:
    """Q-id -> sorted distinct names, from a tab-separated names table."""
    names: dict[str, set[str]] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                line = line.rstrip("\n").rstrip("\r")
                if not line.strip():
                    continue
                qid, *rest = line.split("\t")
                if not QID.match(qid):
                    raise InputError(path, f"first column must be a Wikidata item id (Q<digits>), got {qid!r}", line=lineno)
                found = {n.strip() for n in rest if n.strip()}
                if not found:
                    raise InputError(path, f"{qid} has no names (expected Q-id<TAB>name<TAB>...)", line=lineno)
                names.setdefault(qid, set()).update(found)
    except UnicodeDecodeError as exc:
        raise InputError(path, "not UTF-8 text") from exc
    if not names:
        raise InputError(path, "file is empty")
    return {qid: sorted(found) for qid, found in names.items()}


@register_stage
class AttachAliases(Stage):
    name = "attach_aliases"
    row_wise = True

    class Params(StageParams):
        aliases_file: str
        aliases_file_sha256: Optional[str] = None

    def _path(self) -> Path:
        return self.ctx.materialize(self.params.aliases_file, self.params.aliases_file_sha256, key="aliases_file")

    def input_files(self) -> list[Path]:
        return [self._path()]

    @cached_property
    def _lookup(self):
        import polars as pl

        names = read_alias_table(self._path())
        return pl.DataFrame(
            {"__qid": list(names), "__names": list(names.values())}, schema={"__qid": pl.Utf8, "__names": pl.List(pl.Utf8)}
        )

    def run(self, table) -> StageOutput:
        import polars as pl

        lookup = self._lookup.lazy()
        columns = table.collect_schema().names()
        for side in ("subject", "object"):
            existing = f"{side}_aliases"
            if existing not in columns:
                table = table.with_columns(pl.lit([], dtype=pl.List(pl.Utf8)).alias(existing))
            table = (
                table.join(lookup, left_on=f"{side}_id", right_on="__qid", how="left", maintain_order="left")
                .with_columns(
                    pl.concat_list(pl.col(existing).fill_null([]), pl.col("__names").fill_null([]))
                    .list.set_difference(pl.concat_list(pl.col(side)))
                    .list.sort()
                    .alias(existing)
                )
                .drop("__names")
            )
        return StageOutput(kept=table)
