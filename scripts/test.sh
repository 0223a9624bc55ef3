#!/usr/bin/env bash
# The test suite: unit, integration, reliability and slow (real SmolLM2) tiers. Sets itself up.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KBENCH_MODEL_CACHE="${KBENCH_MODEL_CACHE:-$PWD/.kbench-cache/models}"
exec .venv/bin/python -m pytest -q --durations=25 "$@"  # the 25 slowest tests are listed: CI time stays visible
