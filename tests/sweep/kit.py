"""Shared pieces of the sweep tests: tiny scan cells on twins."""

from __future__ import annotations

import json

#: tiny cells: builtin prompts, few resamples (about two seconds each)
TABLES = """
[prompts]
set = "builtin"
[capture]
batch_size = 8
[analyses]
n_resamples = 50
pca_resamples = 10
null_draws = 10
n_permutations = 50
init_baseline = false
"""
SIX = 'model = ["twin:llama", "twin:qwen3", "twin:gemma2"]\nseed = [0, 1]'
BAD = '[[cell]]\nmodel = "twin:nosuchthing"\nseed = 0\n'


def sweep_file(tmp_path, grid: str, cells: str = "", name: str = "s.toml"):
    p = tmp_path / name
    p.write_text(f'[sweep]\nexperiment = "scan"\n[grid]\n{grid}\n{cells}{TABLES}')
    return p


def masked(path) -> dict:
    """A results file without what differs between two runs of the same settings (times, dates)."""
    d = json.loads(path.read_text())
    d.pop("timings", None)
    d["provenance"].pop("created", None)
    return d


def rows(out):
    import pandas as pd

    return pd.read_parquet(out / "sweep.parquet").sort_values(["cell", "metric", "layer"]).reset_index(drop=True)


def copy_of(reference, tmp_path):
    """A copy of the session's reference sweep (its directory and a sweep file of the same settings) to
    damage: (sweep file, sweep directory)."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(reference[0], out, symlinks=True)
    return sweep_file(tmp_path, SIX, BAD), out


def cell_of(manifest, model: str, seed: int):
    """The id of the reference's cell of ``model`` and ``seed``."""
    return next(c.id for c in manifest.cells if c.coordinates == {"model": model, "seed": seed})
