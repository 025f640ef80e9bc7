"""Error cases of issue 27 part 5: clear errors where there were tracebacks or wrong advice.

Joined into the audit by tests/cli/error_cases.py (docs/errors.md is generated from the joined list);
the building blocks are in tests/cli/case_kit.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.cli.case_kit import TWIN, Case, case, recipe

SETUPS: dict[str, Callable[[Path], None]] = {
    "clear_scan_recipe": recipe("scan.toml", '[probe]\ncommand = "scan"\n[capture]\nbatch_size = 4\n'),
}

CASES: tuple[Case, ...] = (
    # --device: torch accepts these names, geoprobe cannot compute there (was: "unexpected RuntimeError:
    # Tensor.item() cannot be called on meta tensors", "PyTorch is not linked with support for mps devices")
    case(
        "device-meta",
        f"capture --model {TWIN} --device meta --out out",
        "--device meta (shapes, no data)",
        "--device 'meta'",
        "no data",
        "--device cpu, cuda or cuda:N",
    ),
    case(
        "device-meta-scan",
        f"scan --model {TWIN} --device meta --out run",
        "--device meta",
        "--device 'meta'",
        "--device cpu, cuda or cuda:N",
    ),
    case(
        "device-meta-positional",
        f"positional --model {TWIN} --device meta --out run",
        "--device meta",
        "--device 'meta'",
    ),
    case(
        "device-meta-sula",
        f"sula --model {TWIN} --device meta --out run",
        "--device meta",
        "--device 'meta'",
    ),
    case(
        "device-meta-recipe",
        f"run scan.toml --model {TWIN} --device meta --out run",
        "--device meta through a recipe",
        "--device 'meta'",
        setup=("clear_scan_recipe",),
    ),
    case(
        "wt-device-meta",
        "windtunnel run --scale tiny --device meta --out wt",
        "--device meta for training",
        "--device 'meta'",
        "--device cpu, cuda or cuda:N",
    ),
    case(
        "wt-train-device-xla",
        "windtunnel train --scale tiny --device xla --out wt",
        "--device xla (torch knows it, geoprobe does not compute there)",
        "--device 'xla'",
        "cpu or cuda (cuda:N) only",
    ),
    case(
        "device-mps",
        f"capture --model {TWIN} --device mps --out out",
        "--device mps",
        "--device 'mps'",
        "cpu or cuda (cuda:N) only",
        "--device cpu",
    ),
    case(
        "device-cpu-1",
        f"capture --model {TWIN} --device cpu:1 --out out",
        "--device cpu:1 (torch has one CPU device)",
        "--device 'cpu:1'",
        "one CPU device",
        "--device cpu",
    ),
    Case(
        id="device-cuda-99",
        argv=("sula", "--model", TWIN, "--device", "cuda:99", "--out", "run"),
        bad="--device cuda:99 without a GPU (with one: the devices present are named)",
        expect=("--device 'cuda:99'", "no CUDA device"),
        needs_no_cuda=True,
    ),
)
