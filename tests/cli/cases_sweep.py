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


def _cells_linked(d: Path) -> None:
    """d/sw, a finished sweep whose cells/ was moved away and replaced by a symbolic link to it."""
    import os

    _swept(d)
    (d / "sw" / "cells").rename(d / "moved")
    os.symlink("../moved", d / "sw" / "cells")


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
    "sweep_out_nul": text(
        "s.toml", _sweep('model = ["twin:llama"]\nseed = [0]').replace("[sweep]\n", '[sweep]\nout = "a\\u0000b"\n', 1)
    ),
    "sweep_layers_text": text("s.toml", _sweep('layers = ["last"]')),
    "sweep_revision_missing": text("s.toml", _sweep('model = ["traj"]\nrevision = ["runs/trj/checkpoints/step8"]')),
    "sweep_cell_twice": text(
        "s.toml",
        _HEAD + '[[cell]]\nmodel = "twin:llama"\nseed = 0\n[[cell]]\nseed = 0\nmodel = "twin:llama"\n' + _TABLES,
    ),
    "sweep_replicate_unknown": text(
        "s.toml",
        _sweep('model = ["twin:llama"]\nseed = [0, 1]').replace(
            "[sweep]\n", '[sweep]\nreplicates = ["training_run"]\n', 1
        ),
    ),
    "sweep_cells_linked": _cells_linked,
    "sweep_foreign_page": text("sw/sweep.html", "<html>my notes</html>"),
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
        "--executor 'dask' is not local or ray",
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
        "is a run directory of geoprobe's (its results: results.json), not a sweep directory",
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
        "sweep-status-flag",
        "sweep status sw --force",
        "sweep status with a flag that only a run of the sweep takes (it would be ignored)",
        "--force does not apply to `geoprobe sweep status`",
        setup=("sweep_done",),
        before_load=True,
    ),
    case(
        "sweep-contrast-resamples-few",
        "sweep s.toml --out sw --contrast-resamples 5",
        "too few bootstrap resamples for the paired contrasts across checkpoints",
        "--contrast-resamples 5 must be 0 (no contrasts) or 10 to 100,000",
        setup=("sweep_file",),
        before_load=True,
    ),
    case(
        "sweep-threads-beyond-machine",
        "sweep s.toml --out sw --threads 100000",
        "--threads beyond the CPUs of this machine (was: a MemoryError and a traceback)",
        "--threads 100000 is more than the",
        "CPUs this machine has",
        setup=("sweep_file",),
        before_load=True,
    ),
    case(
        "sweep-out-nul",
        "sweep s.toml",
        "[sweep] out holding a NUL byte (was: unexpected ValueError)",
        "is not a usable path",
        setup=("sweep_out_nul",),
        before_load=True,
    ),
    case(
        "sweep-list-setting-text",
        "sweep s.toml --out sw",
        'a grid value of the wrong type for a list setting (layers = ["last"])',
        "grid.layers = 'last' is not",
        setup=("sweep_layers_text",),
        before_load=True,
    ),
    case(
        "sweep-revision-directory-missing",
        "sweep s.toml --out sw",
        "a revision written as a path that does not exist (was: unknown model 'traj', in every cell)",
        "revision 'runs/trj/checkpoints/step8' is written as a path but is no directory here",
        setup=("sweep_revision_missing",),
        before_load=True,
    ),
    case(
        "sweep-cell-twice",
        "sweep s.toml --out sw",
        "two [[cell]] tables of the same coordinates in another key order (was: computed twice)",
        "[[cell]] #2 has the same coordinates as a cell of [[cell]] #1",
        setup=("sweep_cell_twice",),
        before_load=True,
    ),
    case(
        "sweep-replicate-unknown",
        "sweep s.toml --out sw",
        "[sweep] replicates naming no coordinate of the sweep",
        "sweep.replicates names 'training_run', which is no coordinate",
        setup=("sweep_replicate_unknown",),
        before_load=True,
    ),
    case(
        "sweep-cells-symlink",
        "sweep s.toml --out sw",
        "a sweep whose cells/ is a symbolic link (was: its writes went where it points)",
        "is a symbolic link to",
        "a sweep writes its cells only into its own directory",
        setup=("sweep_cells_linked",),
        before_load=True,
    ),
    case(
        "sweep-foreign-page",
        "sweep s.toml --out sw",
        "a sweep directory whose sweep.html the sweep did not write",
        "sweep.html' already exists and was not written by geoprobe",
        setup=("sweep_done", "sweep_foreign_page"),
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
