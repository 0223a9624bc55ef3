"""Is `kbench suite run` slower than the same cells run as separate `kbench evaluate` commands?

    python bench/suite_overhead.py --model smollm2-135m --model gemma3-270m --dataset runs/lama [--limit 50]

A 2-model x 3-task suite (extraction with the cloze prompt, the question prompt and the strict LAMA
protocol, on one dataset), timed two ways in one run, each with a result cache of its own so both
compute every output:

  separate - six `kbench evaluate extraction` processes, one per cell (each loads its model);
  suite    - one `kbench suite run` over the same six cells (each model loads once).

Prints the seconds of each and the ratio suite / separate (below 1: the suite is faster), and
checks that both wrote the same items for every cell.

Measured 2026-12-02 on the shared 2-core machine under heavy load (load average ~15), two tiny
random Llamas (tests/fixtures_models.py), 15 facts, --limit 8: items identical in all six cells;
separate 540 s, suite 57 s, ratio 0.10 (process start-up and model loads dominate at this size).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASKS = {  # label -> the settings, as `kbench evaluate extraction` options and as suite settings
    "cloze": {"prompt": "cloze"},
    "question": {"prompt": "question"},
    "lama": {"protocol": "lama"},
}


def suite_file(folder: Path, models: list[str], dataset: str, limit: int) -> Path:
    lines = ['[suite]\nname = "overhead"\nretries = 0\n']
    for i, model in enumerate(models):
        lines.append(f'[[models]]\nmodel = "{model}"\nname = "m{i}"\n')
    lines.append(f'[[datasets]]\nname = "data"\npath = "{Path(dataset).resolve()}"\n')
    for label, settings in TASKS.items():
        values = "".join(f'{key} = "{value}"\n' for key, value in settings.items())
        lines.append(f'[[tasks]]\ntask = "extraction"\nname = "{label}"\n[tasks.settings]\nlimit = {limit}\n{values}')
    path = folder / "suite.toml"
    path.write_text("\n".join(lines))
    return path


def kbench(args: list[str], cache: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kbench", *args], env={**os.environ, "KBENCH_CACHE": str(cache)}, capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"kbench {' '.join(args)} failed:\n{done.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", required=True, help="twice: the suite's two models")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--limit", type=int, default=50)
    args = parser.parse_args()
    if len(args.model) != 2:
        sys.exit("give --model twice")
    folder = Path(tempfile.mkdtemp(prefix="suite-overhead-"))
    started = time.perf_counter()
    for i, model in enumerate(args.model):
        for label, settings in TASKS.items():
            options = [part for key, value in settings.items() for part in (f"--{key}", value)]
            kbench(
                [
                    "evaluate",
                    "extraction",
                    "--dataset",
                    args.dataset,
                    "--model",
                    model,
                    "--limit",
                    str(args.limit),
                    *options,
                    "--out",
                    str(folder / "separate" / f"m{i}__{label}__data"),
                ],
                folder / "cache-separate",
            )
    separate = time.perf_counter() - started
    started = time.perf_counter()
    kbench(
        ["suite", "run", str(suite_file(folder, args.model, args.dataset, args.limit)), "--out", str(folder / "suite")],
        folder / "cache-suite",
    )
    suite = time.perf_counter() - started
    for cell in sorted((folder / "separate").iterdir()):
        same = (cell / "items.parquet").read_bytes() == (folder / "suite" / "cells" / cell.name / "items.parquet").read_bytes()
        print(f"{cell.name}: items {'identical' if same else 'DIFFER'}")
    print(f"separate: {separate:.1f}s  suite: {suite:.1f}s  ratio suite/separate: {suite / separate:.2f}")
    print(f"outputs in {folder}")


if __name__ == "__main__":
    main()
