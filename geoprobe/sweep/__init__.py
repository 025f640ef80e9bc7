"""Sweeps: one experiment over a grid of models, checkpoints, seeds and settings, each cell an ordinary
run, placed by an executor (in this process, or Ray on a cluster); one manifest, one tidy table and one
page for the whole sweep, the cells' own directories the truth. See docs/sweep.md and docs/scale.md."""

from geoprobe.sweep.manifest import CellRecord, SweepManifest
from geoprobe.sweep.plan import Cell, Plan, make_plan
from geoprobe.sweep.run import run_sweep
from geoprobe.sweep.spec import SweepSpec, read_sweep
from geoprobe.sweep.status import status

__all__ = [
    "Cell",
    "CellRecord",
    "Plan",
    "SweepManifest",
    "SweepSpec",
    "make_plan",
    "read_sweep",
    "run_sweep",
    "status",
]
