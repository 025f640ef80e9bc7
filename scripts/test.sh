#!/usr/bin/env bash
# Set up, then run the whole test suite (CI runs exactly this, after scripts/lint.sh).
# GEOPROBE_SKIP_SETUP=1: the venv is already set up (.ci/run set it up before linting).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${GEOPROBE_SKIP_SETUP:-}" = 1 ] || bash scripts/setup.sh
export HF_HUB_OFFLINE=1
exec .venv/bin/python -m pytest -q --durations=15 "$@"
