#!/usr/bin/env bash
# The main job: build the LAMA benchmark from ../shared/data (or $KBENCH_DATA_DIR), evaluate the packaged SmolLM2-135M on it,
# and write a report. Sets itself up; rerunning resumes finished work.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KBENCH_MODEL_CACHE="${KBENCH_MODEL_CACHE:-$PWD/.kbench-cache/models}"
KB=.venv/bin/kbench
LIMIT="${KBENCH_DEMO_LIMIT:-300}"

$KB build pipelines/lama-trex.toml --out runs/lama
$KB inspect runs/lama
$KB evaluate extraction --dataset runs/lama --model smollm2-135m --limit "$LIMIT" --out runs/extraction
$KB report runs/extraction --out runs/report
echo "report: $PWD/runs/report/index.html"
