"""Planted files for the issue-17 error cases ("runaway and odd inputs") in error_cases.py: each
helper makes, in a case's working directory, the damaged or unusual input that case feeds the CLI."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Callable


def sparse_file(name: str, size: int) -> Callable[[Path], None]:
    """A setup writing a file of ``size`` bytes that takes no disk and no time (a hole, read back as zeros)."""

    def make(d: Path) -> None:
        with open(d / name, "wb") as f:
            f.truncate(size)

    return make


def link_loops(d: Path) -> None:
    """``ln -s loop loop`` in ``d`` and in ``d/dir``: symbolic links that never reach a file."""
    (d / "dir").mkdir()
    os.symlink("loop", d / "loop")
    os.symlink("loop", d / "dir" / "loop")


def truncate_half(f: Path) -> None:
    """Keep the first half of ``f``: what a full disk or an interrupted copy leaves."""
    raw = f.read_bytes()
    f.write_bytes(raw[: len(raw) // 2])


def damaged_tunnel(d: Path) -> None:
    """``d/run``: a finished two-step tiny wind-tunnel run (transformer only) whose final weights are truncated."""
    from geoprobe.windtunnel.run import train_tunnel
    from geoprobe.windtunnel.train import checkpoint_dir, list_checkpoints

    train_tunnel("bijection", "tiny", d / "run", arch="transformer", steps=2)
    run = d / "run" / "transformer"
    truncate_half(checkpoint_dir(run, list_checkpoints(run)[-1]) / "model.safetensors")


def long_prompts(d: Path) -> None:
    """``d/long.txt``: 12 prompts of about 1900 tokens each (under the default cap of 2048)."""
    (d / "long.txt").write_text(
        "".join(" ".join(f"w{i + j}" for i in range(500)) + "\n" for j in range(12)), encoding="utf-8"
    )


@functools.lru_cache(maxsize=1)
def scan_results_json() -> str:
    """A real scan results.json (as JSON text): the analyses of a synthetic 12-prompt capture, no model."""
    from geoprobe.scan import ScanConfig, analyse
    from tests.scan._synthetic import synthetic_capture

    cap, init = synthetic_capture(structured=True, n=12, L=2)
    fast = ScanConfig(n_resamples=10, pca_resamples=10, null_draws=10, n_permutations=10)
    return json.dumps(analyse(cap, fast, init_w_k=init, init_label="planted").to_dict())


def edited_results(**changes: object) -> Callable[[Path], None]:
    """A setup writing ``results.json``: a real scan result with ``changes`` over its top-level fields."""

    def make(d: Path) -> None:
        (d / "results.json").write_text(json.dumps({**json.loads(scan_results_json()), **changes}), encoding="utf-8")

    return make
