"""Error cases of ``geoprobe sweep`` and ``geoprobe sweep status`` (issue 30 part 1). Joined into the
audit by tests/cli/error_cases.py (docs/errors.md is generated from the joined list)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tests.cli.case_kit import Case, case, owned_json, text

_TABLES = '[prompts]\nset = "builtin"\n[capture]\nbatch_size = 8\n[analyses]\nn_resamples = 20\n'
_HEAD = '[sweep]\nexperiment = "scan"\n'


def _sweep(grid: str) -> str:
    return f"{_HEAD}[grid]\n{grid}\n{_TABLES}"


def _swept(d: Path) -> None:
    """A finished one-cell sweep of a twin in d/sw (seed 0), written by s.toml."""
    from geoprobe.sweep import run_sweep

    (d / "s.toml").write_text(_sweep('model = ["twin:llama"]\nseed = [0]'))
    run_sweep(d / "s.toml", out=d / "sw")


SETUPS: dict[str, Callable[[Path], None]] = {
    "sweep_grid_scalar": text("s.toml", _sweep('model = ["twin:llama"]\nseed = 3')),
    "sweep_unknown_experiment": text("s.toml", '[sweep]\nexperiment = "telepathy"\n[grid]\nseed = [0]\n'),
    "sweep_unknown_setting": text("s.toml", _sweep('model = ["twin:llama"]\nwarp_factor = [1, 2]')),
    "sweep_twice": text("s.toml", _sweep('model = ["twin:llama"]\nseed = [0, 0]')),
    "sweep_no_cells": text("s.toml", _HEAD + _TABLES),
    "sweep_not_toml": text("s.toml", "[sweep\nexperiment = scan\n"),
    "sweep_file": text("s.toml", _sweep('model = ["twin:llama"]\nseed = [0]')),
    "sweep_done": _swept,
    "sweep_other_seed": text("t.toml", _sweep('model = ["twin:llama"]\nseed = [1]')),
    "sweep_over_scan": owned_json("run/results.json", "geoprobe.scan"),
    "sweep_empty_dir": lambda d: (d / "empty").mkdir(),
}

CASES: tuple[Case, ...] = (
    case(
        "sweep-file-missing",
        "sweep nosuch.toml --out sw",
        "a sweep file that does not exist",
        "'nosuch.toml'",
        before_load=True,
    ),
    case(
        "sweep-not-toml",
        "sweep s.toml --out sw",
        "a sweep file that is not TOML",
        "is not valid UTF-8 TOML",
        setup=("sweep_not_toml",),
        before_load=True,
    ),
    case(
        "sweep-grid-not-a-list",
        "sweep s.toml --out sw",
        "a grid coordinate given one value instead of a list",
        "grid.seed must be a non-empty list, got 3",
        "write seed = [...]",
        setup=("sweep_grid_scalar",),
        before_load=True,
    ),
    case(
        "sweep-grid-value-twice",
        "sweep s.toml --out sw",
        "a grid coordinate listing one value twice (two cells with one id)",
        "grid.seed lists a value twice",
        setup=("sweep_twice",),
        before_load=True,
    ),
    case(
        "sweep-no-cells",
        "sweep s.toml --out sw",
        "a sweep file with neither [grid] nor [[cell]]",
        "nothing to run",
        setup=("sweep_no_cells",),
        before_load=True,
    ),
    case(
        "sweep-unknown-experiment",
        "sweep s.toml --out sw",
        "an experiment geoprobe does not have",
        "'telepathy'",
        setup=("sweep_unknown_experiment",),
        before_load=True,
    ),
    case(
        "sweep-unknown-setting",
        "sweep s.toml --out sw",
        "a grid coordinate that is no setting of the experiment",
        "warp_factor is not a setting of scan",
        setup=("sweep_unknown_setting",),
        before_load=True,
    ),
    case(
        "sweep-threads-zero",
        "sweep s.toml --out sw --threads 0",
        "--threads 0",
        "--threads 0 must be at least 1",
        setup=("sweep_file",),
        before_load=True,
    ),
    case(
        "sweep-executor-unknown",
        "sweep s.toml --out sw --executor dask",
        "--executor dask (local and ray exist)",
        "--executor 'dask' is not local|ray",
        setup=("sweep_file",),
        before_load=True,
    ),
    case(
        "sweep-address-without-ray",
        "sweep s.toml --out sw --address auto",
        "--address without --executor ray (it would be ignored)",
        "--address 'auto' is for --executor ray",
        setup=("sweep_file",),
        before_load=True,
    ),
    case(
        "sweep-arrays-without-ray",
        "sweep s.toml --out sw --arrays",
        "--arrays without --executor ray (it would be ignored)",
        "--arrays is for --executor ray",
        setup=("sweep_file",),
        before_load=True,
    ),
    case(
        "sweep-out-is-a-scan",
        "sweep s.toml --out run",
        "--out naming a scan's run directory (never overwritten by a sweep)",
        "not a sweep directory; choose another --out",
        setup=("sweep_file", "sweep_over_scan"),
        before_load=True,
    ),
    case(
        "sweep-other-settings",
        "sweep t.toml --out sw",
        "--out holding a sweep of other settings (its finished cells are never discarded without --force)",
        "pass --force",
        setup=("sweep_done", "sweep_other_seed"),
        before_load=True,
    ),
    case(
        "sweep-status-no-sweep",
        "sweep status empty",
        "sweep status on a directory that holds no sweep",
        "holds no sweep",
        setup=("sweep_empty_dir",),
        before_load=True,
    ),
    case(
        "sweep-status-no-directory",
        "sweep status",
        "sweep status without the directory",
        "geoprobe sweep status OUT",
        before_load=True,
    ),
)
