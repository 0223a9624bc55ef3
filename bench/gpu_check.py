"""GPU checks of the in-process backend, one summary line per check (run by bench/gpu_check.sh).

No weights travel: every model is built here from a config with seeded random weights and the
packaged SmolLM2 tokenizer that `gpu_check.sh prepare` copied into `.gpu/tokenizer`.

    python bench/gpu_check.py parity       # CPU vs CUDA, item by item: ranks, log-probs, greedy answers (fp32, bf16)
    python bench/gpu_check.py throughput   # Llama-3-8B-shaped model: kbench calls vs plain `generate`, prompts/s, tokens/s
    python bench/gpu_check.py tiny-folder  # write the small random model the KEE check evaluates

Every line starts with `check <name>:` and ends with `PASS` or `FAIL` (parity, throughput) so the
shell script can count them. What "agree" means on a GPU: fp32 ranks equal except where two
logits are within 1e-4 (kernel reordering), log-probs within 1e-3, greedy answers equal; bf16
is compared with bf16 on CPU with looser bounds (rank agreement >= 90%, log-probs within 0.1),
since bf16 matmuls differ by kernel.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parents[1]
GPU_DIR = HERE / ".gpu"
# "cpu" runs every check's code path on the CPU (a dry run of this script on a machine without a GPU)
DEVICE = os.environ.get("KBENCH_GPU_CHECK_DEVICE", "cuda")
PROMPTS = [
    "Paris is the capital of",
    "The native language of Jean Marais is",
    "Marie Curie was born in",
    "Toyota is a company from",
    "Question: What is the capital of Italy?\nAnswer:",
    "The official language of Brazil is",
    "Albert Einstein was born in the city of",
    "Nokia was founded in",
] * 8
GOLDS = [" France", " French", " Warsaw", " Japan", " Rome", " Portuguese", " Ulm", " Finland"] * 8


def build_random_model(folder: Path, *, hidden: int, layers: int, heads: int, kv_heads: int, intermediate: int) -> Path:
    """A Llama-architecture model with seeded random weights and SmolLM2's tokenizer, saved as a folder."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    if (folder / "config.json").is_file():
        return folder
    tokenizer = AutoTokenizer.from_pretrained(GPU_DIR / "tokenizer")
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    with torch.device(DEVICE):
        model = LlamaForCausalLM(config).to(torch.bfloat16 if hidden >= 2048 else torch.float32)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    del model
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
    return folder


def open_backend(folder: Path, device: str, dtype: str):
    from kbench.models.interface import ModelSpec
    from kbench.models.cached import open_model

    return open_model(ModelSpec(name=str(folder), dtype=dtype, device=device, use_cache=False))


def parity() -> int:
    folder = build_random_model(GPU_DIR / "tiny-random", hidden=256, layers=4, heads=4, kv_heads=2, intermediate=512)
    failures = 0
    for dtype in ("float32", "bfloat16"):
        cpu, gpu = open_backend(folder, "cpu", dtype), open_backend(folder, DEVICE, dtype)
        ranks_cpu = cpu.rank_first_token(PROMPTS, GOLDS)
        ranks_gpu = gpu.rank_first_token(PROMPTS, GOLDS)
        scores_cpu = cpu.score_answers(PROMPTS, GOLDS)
        scores_gpu = gpu.score_answers(PROMPTS, GOLDS)
        text_cpu = cpu.generate(PROMPTS, 12, stop=["\n"])
        text_gpu = gpu.generate(PROMPTS, 12, stop=["\n"])
        rank_equal = sum(a[0] == b[0] for a, b in zip(ranks_cpu, ranks_gpu)) / len(PROMPTS)
        logprob_delta = max(abs(a[0] - b[0]) for a, b in zip(scores_cpu, scores_gpu))
        answers_equal = sum(a == b for a, b in zip(text_cpu, text_gpu)) / len(PROMPTS)
        if dtype == "float32":
            ok = rank_equal >= 0.98 and logprob_delta < 1e-3 and answers_equal >= 0.95
        else:
            ok = rank_equal >= 0.90 and logprob_delta < 0.1 and answers_equal >= 0.75
        failures += not ok
        print(
            f"check parity-{dtype}: ranks equal {rank_equal:.3f}, max |dlogprob| {logprob_delta:.2e}, "
            f"greedy answers equal {answers_equal:.3f} over {len(PROMPTS)} items {'PASS' if ok else 'FAIL'}",
            flush=True,
        )
    return failures


def _plain_generate(folder: Path, prompts: list[str], new_tokens: int) -> tuple[float, int]:
    """transformers' own batched greedy `generate` on the same prompts: the peer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).to("cuda").eval()
    generated = 0
    torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(0, len(prompts), 64):
        batch = tokenizer(prompts[i : i + 64], return_tensors="pt", padding=True).to("cuda")
        with torch.no_grad():
            out = model.generate(**batch, max_new_tokens=new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id)
        generated += int((out[:, batch["input_ids"].shape[1] :] != tokenizer.pad_token_id).sum())
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    del model
    torch.cuda.empty_cache()
    return seconds, generated


def throughput() -> int:
    # Llama-3-8B's shape (32 layers, 4096 hidden, 32 heads, 8 KV heads, 14336 MLP) with SmolLM2's vocabulary.
    folder = build_random_model(GPU_DIR / "llama8b-shape", hidden=4096, layers=32, heads=32, kv_heads=8, intermediate=14336)
    prompts, golds = PROMPTS * 8, GOLDS * 8  # 512 extraction-shaped prompts
    new_tokens = 16
    model = open_backend(folder, "cuda", "bfloat16")
    model.generate(prompts[:8], new_tokens)  # warm-up: kernels, memory-based batch size
    torch.cuda.synchronize()
    start = time.perf_counter()
    both = model.generate_and_rank(prompts, golds, new_tokens, stop=None)
    torch.cuda.synchronize()
    extraction_s = time.perf_counter() - start
    start = time.perf_counter()
    samples = model.sample(prompts[:128], k=20, temperature=0.7, seed=0, max_new_tokens=new_tokens)
    torch.cuda.synchronize()
    kee_s = time.perf_counter() - start
    tokenizer = model.inner.tokenizer  # the backend's own, for a token count beside the peer's
    kbench_tokens = sum(len(tokenizer(text)["input_ids"]) for text, _, _ in both)
    del model
    torch.cuda.empty_cache()
    peer_s, peer_tokens = _plain_generate(folder, prompts, new_tokens)
    ratio = peer_s / extraction_s
    print(
        f"check throughput-extraction: kbench {len(prompts) / extraction_s:.1f} prompts/s "
        f"({kbench_tokens / extraction_s:.0f} tokens/s, greedy + rank), plain generate {len(prompts) / peer_s:.1f} prompts/s "
        f"({peer_tokens / peer_s:.0f} tokens/s), ratio {ratio:.2f} {'PASS' if ratio >= 0.8 else 'FAIL'}",
        flush=True,
    )
    sampled = sum(len(s) for s in samples)
    print(f"check throughput-kee: {128 / kee_s:.1f} prompts/s, {sampled / kee_s:.0f} samples/s (k=20, tau 0.7) PASS", flush=True)
    return int(ratio < 0.8)


def main(argv: list[str]) -> int:
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print("check cuda: no CUDA device visible FAIL")
        return 1
    what = argv[1] if len(argv) > 1 else "parity"
    if what == "parity":
        return parity()
    if what == "throughput":
        return throughput()
    if what == "tiny-folder":
        print(build_random_model(GPU_DIR / "kee-random", hidden=576, layers=8, heads=9, kv_heads=3, intermediate=1536))
        return 0
    raise SystemExit(f"unknown check {what!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
