"""Sweeps: one experiment over a grid of models, checkpoints, seeds and settings, each cell an ordinary
run, placed by an executor (in this process, or Ray on a cluster); one manifest, one tidy table and one
page for the whole sweep. See docs/sweep.md and docs/scale.md."""

from geoprobe.sweep.manifest import CellRecord, SweepManifest
from geoprobe.sweep.run import run_sweep, status
from geoprobe.sweep.spec import Cell, SweepSpec, read_sweep

__all__ = ["Cell", "CellRecord", "SweepManifest", "SweepSpec", "read_sweep", "run_sweep", "status"]
