#!/usr/bin/env bash
# The main job: build the original LAMA probe from ../shared/data (or --data-dir / $KBENCH_DATA_DIR), evaluate the
# packaged SmolLM2-135M on a seeded sample of its test facts under MAPLE's protocol (generate + match) and under
# the strict LAMA protocol (single-token objects, common vocabulary: LAMA P@1), and write a report.
# Sets itself up; rerunning resumes finished work.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KBENCH_MODEL_CACHE="${KBENCH_MODEL_CACHE:-$PWD/.kbench-cache/models}"
KB=.venv/bin/kbench
LIMIT="${KBENCH_DEMO_LIMIT:-300}"
DATA="$($KB data root)"  # --data-dir / $KBENCH_DATA_DIR / ../shared/data, as `kbench build` chooses

$KB build pipelines/lama.toml --out runs/lama --data-dir "$DATA"
$KB inspect runs/lama
$KB evaluate extraction --dataset runs/lama --model smollm2-135m --limit "$LIMIT" --out runs/extraction
$KB evaluate extraction --dataset runs/lama --model smollm2-135m --limit "$LIMIT" --protocol lama \
  --common-vocab "$DATA/lama_trex/common_vocab_cased.txt" --out runs/extraction-lama
$KB report runs/extraction --out runs/report
$KB report runs/extraction-lama --out runs/report-lama
echo "reports: $PWD/runs/report/index.html (MAPLE protocol), $PWD/runs/report-lama/index.html (strict LAMA P@1)"
