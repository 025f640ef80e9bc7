"""Error cases of issue 30 part 5: the data-parallel capture flags (--executor, --workers, --address)
of ``geoprobe capture`` and ``geoprobe scan``, each refused in one line before any model loads. Ray
missing altogether is tested in tests/capture/test_parallel.py (it needs ``ray`` made unimportable).

Joined into the audit by tests/cli/error_cases.py (docs/errors.md is generated from the joined list).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.cli.case_kit import TWIN, Case, case, text

SETUPS: dict[str, Callable[[Path], None]] = {
    "executor_prompts": text("p.txt", "".join(f"Prompt number {i} says that the weather\n" for i in range(12))),
}

_CAPTURE = f"capture --model {TWIN} --prompts p.txt --out out"
_SCAN = f"scan --model {TWIN} --prompts p.txt --out run"

CASES: tuple[Case, ...] = (
    case(
        "capture_executor_unknown",
        f"{_CAPTURE} --executor dask",
        "--executor dask (local and ray exist)",
        "--executor 'dask' is not local or ray",
        setup=("executor_prompts",),
        before_load=True,
    ),
    case(
        "capture_workers_without_ray",
        f"{_CAPTURE} --workers 4",
        "--workers without --executor ray (it would be ignored)",
        "--workers applies to --executor ray only",
        "add --executor ray",
        setup=("executor_prompts",),
        before_load=True,
    ),
    case(
        "scan_address_without_ray",
        f"{_SCAN} --address auto",
        "--address without --executor ray (it would be ignored)",
        "--address applies to --executor ray only",
        setup=("executor_prompts",),
        before_load=True,
    ),
    case(
        "capture_workers_zero",
        f"{_CAPTURE} --executor ray --workers 0",
        "--workers 0",
        "--workers 0 is not 1 to 4096",
        setup=("executor_prompts",),
        before_load=True,
    ),
    case(
        "scan_address_malformed",
        f"{_SCAN} --executor ray --address http://head:8265",
        "--address that is no Ray address (the dashboard's http URL)",
        "--address 'http://head:8265' is not auto, local, ray://HOST:PORT or HOST:PORT",
        setup=("executor_prompts",),
        before_load=True,
    ),
)
