"""A sweep killed (as by SIGKILL: no handler, no ``finally``) at two moments of a cell's life, then rerun,
ends with the same table and results as an uninterrupted sweep. Before, a kill after the cell's last write
and before the manifest's rewrite broke the cell for ever. Every commit of a sweep's life is killed in
turn by the hostile round (``python -m tests.sweep.hostile_round``; counts in docs/sweep.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from geoprobe.sweep import make_plan, read_sweep
from tests.sweep.kit import masked, rows, sweep_file

ROOT = Path(__file__).resolve().parents[2]
GRID = 'model = ["twin:llama"]\nseed = [0]'


def _run(args, cwd, kill=None):
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    head = ["-m", "geoprobe"] if kill is None else ["-m", "tests.sweep.killer", f"~{kill}"]
    return subprocess.run([sys.executable, *head, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    "commit, said",
    [
        # the cell's results written, its run record not: computed again, saying why
        ("replace {cell}/.geoprobe-run.json", "its results.json has no matching run record"),
        # the cell's run complete, its record's final status and the manifest not written: adopted
        ("replace {cell}/.geoprobe-cell.json#3", "resuming: 1 of 1 cells verified as finished"),
        # the sweep's marker not yet written (was: cells/ made before it, and every rerun refused the directory
        # as "not written by geoprobe"): the rerun starts the sweep as new
        ("replace {out}/.geoprobe-sweep.json", ""),
    ],
)
def test_a_kill_then_a_rerun_equals_an_uninterrupted_sweep(reference, tmp_path, commit, said, capsys, monkeypatch):
    """The cell is the reference sweep's twin:llama seed 0: same coordinates and settings, same numbers."""
    spec = sweep_file(tmp_path, GRID)
    out = tmp_path / "out"
    cell = out / "cells" / make_plan(read_sweep(spec)).cells[0].id
    killed = _run(["sweep", str(spec), "--out", str(out)], tmp_path, kill=commit.format(cell=cell, out=out))
    assert killed.returncode == 137 and "killed before commit" in killed.stderr, killed.stderr
    from tests.cli.test_cli import run_cli

    code, _, err = run_cli(["sweep", str(spec), "--out", str(out)], capsys, monkeypatch, cwd=tmp_path)  # here
    assert code == 0, err
    assert said in " ".join(err.split())
    once = rows(reference[0])
    assert rows(out).equals(once[once["cell"] == cell.name].reset_index(drop=True))
    assert masked(cell / "results.json") == masked(reference[0] / "cells" / cell.name / "results.json")
