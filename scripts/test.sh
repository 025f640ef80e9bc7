#!/usr/bin/env bash
# Set up, then run the whole test suite (CI runs exactly this, after scripts/lint.sh).
# --fast: the package's unit tests only (-m "not slow and not e2e": no real weights, no whole commands,
# subprocesses, browser, Ray cluster, notebooks or training runs; tests/conftest.py lists the e2e modules),
# for use while developing (docs/testing.md#tiers); CI keeps the whole suite.
# Other arguments go to pytest (bash scripts/test.sh --fast tests/analysis -x).
# GEOPROBE_SKIP_SETUP=1: the venv is already set up (.ci/run set it up before linting).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=()
args=()
for a in "$@"; do
  if [ "$a" = --fast ]; then tier=(-m "not slow and not e2e"); else args+=("$a"); fi
done
[ "${GEOPROBE_SKIP_SETUP:-}" = 1 ] || bash scripts/setup.sh
export HF_HUB_OFFLINE=1
exec .venv/bin/python -m pytest -q --durations=15 ${tier[@]+"${tier[@]}"} ${args[@]+"${args[@]}"}
