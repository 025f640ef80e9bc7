#!/usr/bin/env bash
# The house rules CI holds before the tests (issue 19 part 5; docs/architecture.md): the import layers
# and no import cycles (lint-imports, pyproject [tool.importlinter]), ruff lint and format check
# (pyproject [tool.ruff]), no module over 500 lines and no private name across modules
# (tests/test_house.py). Every check runs; the script fails if any failed, listing them all.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${GEOPROBE_VENV:-.venv}/bin
failed=()
check() {  # check NAME COMMAND...
  local name=$1
  shift
  echo "== $name: $*"
  "$@" || failed+=("$name")
}
check "import layers" "$BIN/lint-imports"
check "ruff lint" "$BIN/ruff" check .
check "ruff format" "$BIN/ruff" format --check .
check "house rules" "$BIN/python" -m pytest -q -p no:cacheprovider tests/test_house.py
if ((${#failed[@]})); then
  echo "lint: failed: ${failed[*]}" >&2
  exit 1
fi
echo "lint: all checks passed"
