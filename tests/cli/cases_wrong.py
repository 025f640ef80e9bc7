"""Error cases of issue 27 part 4: no silent wrong result (mismatched captures, auto_map, odd prompt
files, odd recipe values, FIFOs).

Joined into the audit by tests/cli/error_cases.py (docs/errors.md is generated from the joined list);
the building blocks are in tests/cli/case_kit.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.cli.case_kit import Case

SETUPS: dict[str, Callable[[Path], None]] = {}

CASES: tuple[Case, ...] = ()
