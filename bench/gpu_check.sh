#!/usr/bin/env bash
# The GPU path, ready to verify on a machine with one CUDA GPU, torch and transformers and no network.
#
#   bash bench/gpu_check.sh prepare    # HERE (CPU machine with the venv): wheels, tokenizer, a small built dataset -> .whl/ .gpu/
#   bash bench/gpu_check.sh            # THERE (the GPU machine), from the repository root, with .whl/ and .gpu/ carried along
#
# What travels (under 64 MiB): the checkout, .whl/ (the wheels kbench needs beyond torch/transformers
# that such an image lacks: pydantic, polars, jsonschema and their dependencies, for CPython 3.12 x86_64),
# .gpu/tokenizer (SmolLM2's tokenizer files, no weights) and .gpu/dataset (100+ facts of the LAMA probe).
# Models are built there from configs with seeded random weights. Checks, one summary line each:
#   1. the model-interface tests on cuda (KBENCH_TEST_DEVICE=cuda: tests/unit/test_runner.py, test_cached_model.py, test_shared_prefix.py)
#   2. CPU vs GPU item by item on a tiny random model: ranks, log-probs, greedy answers, fp32 and bf16
#   3. throughput on a Llama-3-8B-shaped random model (bf16): extraction-shaped and KEE-shaped calls,
#      prompts/s and tokens/s, against plain transformers `generate` on the same prompts
#   4. KEE baseline and CAA on 100 items of the built dataset (a SmolLM2-shaped random model)
#   5. the in-process vLLM backend (`--model vllm:`), where the image has vllm (it cannot be carried: no
#      network there): extraction on the same 100 items and model, against the transformers backend on
#      cuda, the share of identical answers and ranks printed; reported SKIP without vllm
# Budget: planned at about 8 minutes on an H200 (most of it writing and loading the 16 GB random 8B model);
# never measured: this script has not run on a GPU yet.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-run}" = "prepare" ]; then
  set -e
  PY=.venv/bin/python
  mkdir -p .whl .gpu
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
  grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
  platforms=()
  for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$p")
  done
  $PY -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" -d .whl \
    pydantic pydantic-core annotated-types typing-inspection polars polars-runtime-32 jsonschema jsonschema-specifications referencing rpds-py \
    || $PY -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" -d .whl \
      pydantic pydantic-core annotated-types typing-inspection polars jsonschema jsonschema-specifications referencing rpds-py
  folder=$($PY -c "from kbench.models.loading import resolve_source; print(resolve_source('smollm2-135m')[0])")
  mkdir -p .gpu/tokenizer
  cp "$folder"/tokenizer.json "$folder"/tokenizer_config.json .gpu/tokenizer/
  [ -f "$folder/chat_template.jinja" ] && cp "$folder/chat_template.jinja" .gpu/tokenizer/
  if [ ! -f .gpu/dataset/manifest.json ]; then
    $PY -m kbench build pipelines/lama-trex.toml --out .gpu/dataset-build --set load.max_per_relation=20
    rm -rf .gpu/dataset && mv .gpu/dataset-build .gpu/dataset && rm -rf .gpu/dataset/.kbench
  fi
  du -sh .whl .gpu
  echo "prepared: run 'bash bench/gpu_check.sh' on the GPU machine with carry [.whl, .gpu]"
  exit 0
fi

export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export KBENCH_CACHE="${TMPDIR:-/tmp}/kbench-gpu-cache" KBENCH_MODEL_CACHE="${TMPDIR:-/tmp}/kbench-gpu-models"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="$PWD:/tmp/site"
fi
failed=0
summary() { echo "check $1: $2"; [ "${2##* }" = PASS ] || failed=$((failed + 1)); }

# 1. the interface tests on cuda (their fixtures load the tiny models on $KBENCH_TEST_DEVICE)
if KBENCH_TEST_DEVICE=cuda timeout 120 python3 -m pytest -q -x -p no:cacheprovider tests/unit/test_runner.py tests/unit/test_cached_model.py tests/unit/test_shared_prefix.py \
     -o addopts="" >/tmp/gpu-tests.log 2>&1 < /dev/null; then
  summary interface-tests "$(tail -1 /tmp/gpu-tests.log) PASS"
else
  tail -30 /tmp/gpu-tests.log
  summary interface-tests "$(tail -1 /tmp/gpu-tests.log) FAIL"
fi

# 2 and 3: parity and throughput (each prints its own `check ...` lines)
timeout 120 python3 bench/gpu_check.py parity || failed=$((failed + 1))
timeout 300 python3 bench/gpu_check.py throughput || failed=$((failed + 1))

# 4. KEE baseline and CAA on 100 items of the built dataset
model=$(python3 bench/gpu_check.py tiny-folder | tail -1)
rm -rf /tmp/kee-gpu
timeout 150 python3 -m kbench evaluate kee --dataset .gpu/dataset --model "$model" --device cuda --dtype bfloat16 \
  --techniques baseline,caa --limit 100 --out /tmp/kee-gpu >/tmp/kee-gpu.log 2>&1 < /dev/null
rc=$?
if [ "$rc" = 0 ]; then
  summary kee "$(python3 -c "import json; r = json.load(open('/tmp/kee-gpu/results.json')); print('headline', ', '.join(f'{k} {v.get(\"value\")} (n={v.get(\"n\")})' for k, v in r['headline'].items()))") PASS"
else
  tail -20 /tmp/kee-gpu.log
  summary kee "exit code $rc FAIL"
fi
# 5. the in-process vLLM backend against the transformers backend on the same GPU, model and items
if python3 -c "import vllm" >/dev/null 2>&1; then
  rm -rf /tmp/vllm-gpu /tmp/hf-gpu
  timeout 300 python3 -m kbench evaluate extraction --dataset .gpu/dataset --model "vllm:$model;gpu_memory_utilization=0.3" \
    --limit 100 --no-cache --out /tmp/vllm-gpu >/tmp/vllm-gpu.log 2>&1 < /dev/null
  rc=$?
  timeout 150 python3 -m kbench evaluate extraction --dataset .gpu/dataset --model "$model" --device cuda --limit 100 \
    --no-cache --out /tmp/hf-gpu >>/tmp/vllm-gpu.log 2>&1 < /dev/null
  if [ "$rc" = 0 ] && [ -f /tmp/hf-gpu/items.parquet ]; then
    summary vllm-backend "$(python3 -c "
import polars as pl
a, b = (pl.read_parquet(f'/tmp/{w}-gpu/items.parquet') for w in ('vllm', 'hf'))
j = a.join(b, on='id', suffix='_hf')
print(f'identical answers {(j[\"prediction\"] == j[\"prediction_hf\"]).sum()}/{j.height}, ranks {(j[\"gold_rank\"] == j[\"gold_rank_hf\"]).sum()}/{j.height}')
") PASS"
  else
    tail -20 /tmp/vllm-gpu.log
    summary vllm-backend "exit code $rc FAIL"
  fi
else
  echo "check vllm-backend: vllm is not installed in this image: SKIP"
fi
echo "gpu_check: $failed failing check(s)"
exit $((failed > 0))
