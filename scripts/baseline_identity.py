"""The SmolLM2 baseline: twelve evaluations whose outputs must not change under a refactor.

A change that should not change any number (issue #40's typed rows, task folders, backend template) is
checked by running the same twelve commands on the code before and after it and comparing the runs:

    python scripts/baseline_identity.py run /work/baseline-before      # on the code before the change
    python scripts/baseline_identity.py run /work/baseline-after       # on the code after it
    python scripts/baseline_identity.py compare /work/baseline-before /work/baseline-after

`run OUT_DIR` builds five test-size datasets from the shared data (found as `kbench build` finds it) into
OUT_DIR/datasets/ and runs the twelve commands into OUT_DIR/<name>/, all with the checkout that holds
this script (it goes first on PYTHONPATH) and the interpreter that runs the script. Every command runs
in OUT_DIR on relative paths (so no run records where OUT_DIR is), with `--no-cache` and a fresh
KBENCH_CACHE=OUT_DIR/cache, so nothing is reused from an earlier run; only the converted model weights
(KBENCH_MODEL_CACHE) are shared. It took 27 minutes on two CPU cores shared with five other jobs (load
about 12; one command alone ran about 3 times faster); OUT_DIR/timings.json says how long each step
took. The datasets (paths relative to the repository):

    datasets/lama       kbench build pipelines/lama.toml (the original LAMA probe; AutoPrompt train split)
    datasets/lama-trex  kbench build pipelines/lama-trex.toml --set 'load.relations=["P19","P20"]'
                            --set load.max_per_relation=40
    datasets/maple-wiki kbench build pipelines/maple-wiki.toml
    datasets/left       kbench build pipelines/left-textbook.toml
    datasets/evolving   kbench build pipelines/evolving.toml

and the twelve commands (each also gets `--model smollm2-135m --no-cache --out <name>`):

    extraction-cloze     evaluate extraction --dataset datasets/lama --limit 20 --prompt cloze
    extraction-question  evaluate extraction --dataset datasets/lama --limit 20 --prompt question
    extraction-chat      evaluate extraction --dataset datasets/lama --limit 20 --prompt chat
    extraction-fewshot   evaluate extraction --dataset datasets/lama --limit 20 --prompt question --fewshot 3
    extraction-lama-p1   evaluate extraction --dataset datasets/lama --limit 40 --protocol lama
                             --common-vocab data/common_vocab_cased.txt
    qa-question          evaluate qa --dataset datasets/evolving --limit 12 --prompt question
    qa-chat              evaluate qa --dataset datasets/evolving --limit 12 --prompt chat
    kee-baseline         evaluate kee --dataset datasets/maple-wiki --limit 6 --k 2 --sweep-max 2
                             --temperatures 0.7 --techniques baseline
    kee-genread          (the same) --techniques genread --technique-param genread.document_tokens=16
    kee-decore           (the same) --techniques decore
    truefalse            evaluate truefalse --dataset datasets/left --limit 8
    choice               evaluate choice --dataset datasets/lama-trex --limit 20

(`data/common_vocab_cased.txt` is LAMA's common vocabulary, copied from the data root into OUT_DIR.)

`compare BEFORE AFTER` prints one line per command and exits 1 on any difference:
  * every `*.parquet` file of the run and `items.jsonl` must be byte-identical (the items);
  * `results.json` must be equal once these fields, which legitimately differ between two runs of the
    same numbers, are dropped (IGNORED): `environment` (kbench commit and version, package versions,
    platform, CPU name, threads: the machine and the checkout, not the results), `timing` (seconds and
    items per second), and `model.weights.file` / `model.weights.converted_folder` (where the packaged
    GGUF is installed and where its converted copy is cached: absolute paths of this machine; the
    weights' `sha256` beside them stays compared).
Logs, journals and pictures are not compared (they hold times).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODEL = ["--model", "smollm2-135m", "--no-cache"]

DATASETS = {
    "lama": ["pipelines/lama.toml"],
    "lama-trex": ["pipelines/lama-trex.toml", "--set", 'load.relations=["P19","P20"]', "--set", "load.max_per_relation=40"],
    "maple-wiki": ["pipelines/maple-wiki.toml"],
    "left": ["pipelines/left-textbook.toml"],
    "evolving": ["pipelines/evolving.toml"],
}

_EXTRACTION = ["evaluate", "extraction", "--dataset", "datasets/lama", "--limit", "20"]
_QA = ["evaluate", "qa", "--dataset", "datasets/evolving", "--limit", "12"]
_KEE = ["evaluate", "kee", "--dataset", "datasets/maple-wiki", "--limit", "6", "--k", "2", "--sweep-max", "2",
        "--temperatures", "0.7"]
COMMANDS = {
    "extraction-cloze": [*_EXTRACTION, "--prompt", "cloze"],
    "extraction-question": [*_EXTRACTION, "--prompt", "question"],
    "extraction-chat": [*_EXTRACTION, "--prompt", "chat"],
    "extraction-fewshot": [*_EXTRACTION, "--prompt", "question", "--fewshot", "3"],
    "extraction-lama-p1": ["evaluate", "extraction", "--dataset", "datasets/lama", "--limit", "40", "--protocol", "lama",
                           "--common-vocab", "data/common_vocab_cased.txt"],
    "qa-question": [*_QA, "--prompt", "question"],
    "qa-chat": [*_QA, "--prompt", "chat"],
    "kee-baseline": [*_KEE, "--techniques", "baseline"],
    "kee-genread": [*_KEE, "--techniques", "genread", "--technique-param", "genread.document_tokens=16"],
    "kee-decore": [*_KEE, "--techniques", "decore"],
    "truefalse": ["evaluate", "truefalse", "--dataset", "datasets/left", "--limit", "8"],
    "choice": ["evaluate", "choice", "--dataset", "datasets/lama-trex", "--limit", "20"],
}

#: results.json fields that differ between two runs of the same numbers (see the module docstring).
IGNORED = [("environment",), ("timing",), ("model", "weights", "file"), ("model", "weights", "converted_folder")]


def _kbench(args: list[str], cwd: Path, env: dict[str, str], capture: bool = False) -> str:
    done = subprocess.run([sys.executable, "-m", "kbench", *args], cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE if capture else None)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): kbench {' '.join(args)}")
    return done.stdout or ""


def run(out: Path) -> None:
    if out.exists() and any(out.iterdir()):
        sys.exit(f"{out} is not empty: a baseline is recorded into a fresh folder, so nothing is reused")
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(REPO))
    from kbench.paths import model_cache_dir

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "KBENCH_MODEL_CACHE": str(model_cache_dir()),  # read before KBENCH_CACHE moves: converting is slow
           "KBENCH_CACHE": str(out / "cache")}
    data_root = Path(_kbench(["data", "root"], out, env, capture=True).strip())
    (out / "data").mkdir()
    shutil.copyfile(data_root / "lama_trex" / "common_vocab_cased.txt", out / "data" / "common_vocab_cased.txt")
    timings: dict[str, float] = {}
    steps = [(f"datasets/{name}", ["build", str(REPO / recipe), *rest, "--out", f"datasets/{name}"])
             for name, (recipe, *rest) in DATASETS.items()]
    steps += [(name, [*args, *MODEL, "--out", name]) for name, args in COMMANDS.items()]
    for name, args in steps:
        print(f"== {name}: kbench {' '.join(args)}", flush=True)
        start = time.monotonic()
        _kbench(args, out, env)
        timings[name] = round(time.monotonic() - start, 1)
        print(f"== {name}: {timings[name]} s", flush=True)
    (out / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")


def comparable(results: dict) -> dict:
    """results.json without the IGNORED fields."""
    results = json.loads(json.dumps(results))
    for path in IGNORED:
        node = results
        for key in path[:-1]:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return results


def json_differences(a, b, path: str = "") -> list[str]:
    """Dotted paths where two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for key in sorted(set(a) | set(b), key=str)
                for d in (json_differences(a.get(key), b.get(key), f"{path}.{key}".lstrip("."))
                          if key in a and key in b else [f"{path}.{key}".lstrip(".")])]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in json_differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path or "(top)"]


def compare_run(before: Path, after: Path) -> list[str]:
    """What differs between two run folders of one command (empty: identical)."""
    if not (before / "results.json").is_file() or not (after / "results.json").is_file():
        return ["results.json missing"]
    items = lambda run: {p.relative_to(run) for p in [*run.rglob("*.parquet"), run / "items.jsonl"] if p.is_file()}
    problems = [f"only in one run: {p}" for p in sorted(items(before) ^ items(after))]
    problems += [f"{p} bytes differ" for p in sorted(items(before) & items(after))
                 if (before / p).read_bytes() != (after / p).read_bytes()]
    diffs = json_differences(*(comparable(json.loads((run / "results.json").read_text())) for run in (before, after)))
    if diffs:
        more = f" (+{len(diffs) - 5} more)" if len(diffs) > 5 else ""
        problems.append(f"results.json differs at {', '.join(diffs[:5])}{more}")
    return problems


def compare(before: Path, after: Path) -> int:
    differing = 0
    for name in COMMANDS:
        problems = compare_run(before / name, after / name)
        differing += bool(problems)
        print(f"{name}: " + ("; ".join(problems) if problems else "identical"))
    print(f"{len(COMMANDS) - differing} of {len(COMMANDS)} identical")
    return 1 if differing else 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "run":
        run(Path(argv[1]).resolve())
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
