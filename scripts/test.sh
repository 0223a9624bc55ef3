#!/usr/bin/env bash
# The test suite: unit, integration, reliability and slow (real SmolLM2) tiers. Sets itself up.
# One pytest-xdist worker per core (at most 4), each file on one worker (module fixtures such as a
# served model start once; tests/conftest.py groups the Ray files together, the vLLM files together, and
# puts the longest groups first), and each worker's torch on its share of the cores, so two workers on
# 2 cores do not oversubscribe them.
# KBENCH_TEST_WORKERS=1 runs everything in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KBENCH_MODEL_CACHE="${KBENCH_MODEL_CACHE:-$PWD/.kbench-cache/models}"
cores="$(nproc)"
workers="${KBENCH_TEST_WORKERS:-$(( cores < 4 ? cores : 4 ))}"
if [ "$workers" -gt 1 ]; then
  threads=$(( cores / workers > 0 ? cores / workers : 1 ))
  export OMP_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads"
  parallel=(-n "$workers" --dist loadgroup --no-loadscope-reorder)
else
  parallel=(-p no:xdist)
fi
exec .venv/bin/python -m pytest -q --durations=25 "${parallel[@]}" "$@"  # the 25 slowest tests are listed: CI time stays visible
