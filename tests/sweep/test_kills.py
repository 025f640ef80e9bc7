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


@pytest.fixture(scope="module")
def once(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("once")
    r = _run(["sweep", str(sweep_file(tmp, GRID)), "--out", str(tmp / "out")], tmp)
    assert r.returncode == 0, r.stderr
    return tmp / "out"


@pytest.mark.parametrize(
    "commit, said",
    [
        # the cell's results written, its run record not: computed again, saying why
        ("replace {cell}/.geoprobe-run.json", "its results.json has no matching run record"),
        # the cell's run complete, its record's final status and the manifest not written: adopted
        ("replace {cell}/.geoprobe-cell.json#3", "resuming: 1 of 1 cells verified as finished"),
    ],
)
def test_a_kill_then_a_rerun_equals_an_uninterrupted_sweep(once, tmp_path, commit, said):
    spec = sweep_file(tmp_path, GRID)
    out = tmp_path / "out"
    cell = out / "cells" / make_plan(read_sweep(spec)).cells[0].id
    killed = _run(["sweep", str(spec), "--out", str(out)], tmp_path, kill=commit.format(cell=cell))
    assert killed.returncode == 137 and "killed before commit" in killed.stderr, killed.stderr
    again = _run(["sweep", str(spec), "--out", str(out)], tmp_path)
    assert again.returncode == 0, again.stderr
    assert said in " ".join(again.stderr.split())
    assert rows(out).equals(rows(once))
    assert masked(next((out / "cells").glob("*/results.json"))) == masked(next((once / "cells").glob("*/results.json")))
