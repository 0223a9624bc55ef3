"""Writes docs/benchmarks.md from bench/results/*.json, the rows the bench scripts record (`--record`, bench/record.py):
one table per script, one row per recorded run. Scripts that record nothing yet are listed with what they print.

    python bench/collect.py            # rewrite docs/benchmarks.md
    python bench/collect.py --check    # exit 1 when docs/benchmarks.md is not what the records give
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PAGE = BENCH.parent / "docs" / "benchmarks.md"
HELPERS = {"record", "collect"}


def cell(value: object) -> str:
    if isinstance(value, float):
        value = f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    elif isinstance(value, int):
        value = f"{value:,}"
    return " ".join(str(value).split()).replace("|", "\\|")


def summary(script: Path) -> str:
    """The first paragraph of the script's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split())


def table(rows: list[dict]) -> list[str]:
    figures = list(dict.fromkeys(key for row in rows for key in row["figures"]))
    head = ["date", "command", "commit", "cores", "peak GFLOP/s", "load", *figures]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in rows:
        m = row["machine"]
        load = "" if m.get("load_1min") is None else cell(round(m["load_1min"], 1))
        values = [
            row["date"],
            f"`{cell(row['command'])}`",
            row.get("commit") or "",
            cell(m["cores"]),
            cell(m["peak_gflops"]),
            load,
        ]
        lines.append("| " + " | ".join([*values, *(cell(row["figures"].get(f, "")) for f in figures)]) + " |")
    return lines


def page() -> str:
    scripts = sorted(p for p in BENCH.glob("*.py") if p.stem not in HELPERS)
    recorded = [s for s in scripts if (BENCH / "results" / f"{s.stem}.json").is_file()]
    lines = [
        "# Benchmarks",
        "",
        "Written by `python bench/collect.py` from the rows the bench scripts record with `--record`",
        "(`bench/results/*.json`): each row is one run, with its exact command, date, commit and machine (usable cores,",
        "a float32 matmul peak measured at the time, the 1-minute load). Do not edit this page by hand. What each",
        "script measures, wired or not: [The bench scripts](bench-scripts.md).",
        "",
    ]
    for script in recorded:
        rows = json.loads((BENCH / "results" / f"{script.stem}.json").read_text())
        lines += [f"## `bench/{script.name}`", "", summary(script), "", *table(rows), ""]
    missing = [s for s in scripts if s not in recorded]
    if missing:
        lines += ["## Not recorded yet", "", "These scripts print their figures but do not record them yet (no `--record`):", ""]
        lines += [f"- `bench/{s.name}`: {summary(s)}" for s in missing]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = page()
    if args.check:
        if PAGE.read_text(encoding="utf-8") != text:
            sys.exit(f"{PAGE} is not what bench/results/ gives: run `python bench/collect.py`")
        return
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
