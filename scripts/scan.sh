#!/usr/bin/env bash
# Set up, then scan the embedded SmolLM2-135M (offline) and write runs/smollm2-135m/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/geoprobe scan --model smollm2-135m --out runs/smollm2-135m --overwrite "$@"
