"""The card's account of what each build stage dropped, and how many, per fact source.

From stats.json (rows in/out and drops by reason per stage, plus each stage's `details`) and
`rejected/<stage>.parquet` (the dropped rows with their reason). Where the dropped rows have a
`source` column, the drops are broken down by source; where the stage's input table is still in
the build folder (`.kbench/stages/NN_<id>/output.parquet` of the stage before), each count is
also given as a share of that source's rows entering the stage. A published copy has no
`.kbench/`, so a card rewritten there keeps the counts and loses only the shares.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbench.cards.folder import DatasetFolder


def _percent(part: int, whole: int) -> str:
    return f"{part:,} of {whole:,} ({100 * part / whole:.1f}%)" if whole else f"{part:,}"


def _stage_input(root: Path, index: int) -> Path | None:
    """The table that entered stage `index` (the previous stage's output), when the build left it."""
    if index == 0:
        return None
    found = sorted((root / ".kbench" / "stages").glob(f"{index - 1:02d}_*/output.parquet"))
    return found[0] if found else None


def _by_source(root: Path, stage: dict[str, Any], index: int) -> str:
    import polars as pl

    from kbench.cards.markdown import table

    rejected_path = root / "rejected" / f"{stage['id']}.parquet"
    if not rejected_path.is_file():
        return ""
    rejected = pl.read_parquet(rejected_path)
    if "source" not in rejected.columns:
        return ""
    entering: dict[str, int] = {}
    input_path = _stage_input(root, index)
    if input_path is not None:
        counts = pl.scan_parquet(input_path).group_by("source").len().collect()
        entering = {s: n for s, n in counts.iter_rows()}
    counts = rejected.group_by("reason", "source").len()
    sources = sorted(set(counts["source"].to_list()) | set(entering))
    rows = []
    for reason in sorted(set(counts["reason"].to_list())):
        row = [f"`{reason}`"]
        for source in sources:
            n = counts.filter((pl.col("reason") == reason) & (pl.col("source") == source))["len"].sum()
            row.append(_percent(n, entering.get(source, 0)))
        rows.append(row)
    note = " (each count as a share of that source's rows entering the step)" if entering else ""
    return f"Dropped rows by reason and fact source{note}:\n\n" + table(["reason", *sources], rows)


def _details(details: dict[str, Any]) -> str:
    return "\n".join(f"  - {key}: `{json.dumps(value, sort_keys=True, ensure_ascii=False)}`" for key, value in details.items())


def render_drops(folder: DatasetFolder) -> str:
    stages = folder.stats.get("stages") or []
    if not stages:
        return "No stage statistics were recorded (stats.json is missing or empty)."
    loaded = stages[0].get("rows_out", 0)
    total_dropped = sum(s.get("dropped_total", 0) for s in stages)
    if not total_dropped:
        out = [
            f"**No row was dropped.** The first step read {loaded:,} rows and the splits hold "
            f"{folder.stats.get('final_rows', folder.rows()):,}: every fact of the input files is in the dataset."
        ]
    else:
        out = [
            f"{total_dropped:,} rows were dropped, each by the step and for the reason below, and "
            f"{folder.stats.get('final_rows', folder.rows()):,} remain (rows in and out of every step: "
            '"How it was built"). Step by step:'
        ]
    for index, stage in enumerate(stages):
        dropped = stage.get("dropped") or {}
        details = stage.get("details") or {}
        if not dropped and not details:
            continue
        reasons = "; ".join(f"`{r}` {n:,}" for r, n in sorted(dropped.items(), key=lambda kv: -kv[1]))
        head = (
            f"- **`{stage['id']}`** (`{stage.get('stage', '')}`): dropped "
            f"{_percent(stage.get('dropped_total', 0), stage.get('rows_in', 0))} rows" + (f" ({reasons})" if reasons else "")
        )
        out += ["", head]
        if details:
            out += ["", "  Recorded by the step (stats.json `details`):", "", _details(details)]
        breakdown = _by_source(folder.root, stage, index)
        if breakdown:
            out += ["", breakdown]
    return "\n".join(out)
