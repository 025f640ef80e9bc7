"""The sweep driver's own cost per cell, at 10, 1,000 and 20,000 cells, and the expansion of a large sweep
file (issue 35).

**Driver per cell.** A sweep whose every cell fails at once (``twin:nosuchthing``: the cell's own work is
a lookup that fails in about a millisecond), run with ``--executor local``: the driver's time per cell is
(wall − the cells' own seconds, as each cell records them) ÷ cells. Everything the driver does is in it:
reading and checking the sweep file, reading OUT, writing each cell's record and the manifest, the
progress callback, the table and the page. Target: flat from 10 to 20,000 cells, ≤ 50 ms.

**Expansion.** A sweep file of a 15,000-cell grid (150 models × 100 seeds) and 5,000 ``[[cell]]`` tables,
each with a grid cell's values and a setting of its own: read, made into cells and every cell checked
(``make_plan``). Target: ≤ 2 s.

``--root DIR`` times the geoprobe of another checkout (e.g. a ``git worktree`` of an earlier commit) with
the same sweeps, for a before/after comparison.

    python benchmarks/bench_sweep_driver.py                         # writes its table into docs/benchmarks.md
    python benchmarks/bench_sweep_driver.py --cells 10 1000 --no-write
    python benchmarks/bench_sweep_driver.py --root /tmp/geoprobe-before --cells 10 1000 --no-write
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEAD = '[sweep]\nexperiment = "scan"\n'
TABLES = '[prompts]\nset = "builtin"\n'


def failing_sweep(path: Path, cells: int) -> Path:
    """A sweep of ``cells`` cells that all fail at once (an unknown twin): seed × n_resamples."""
    seeds = min(cells, 200)
    resamples = cells // seeds
    assert seeds * resamples == cells, f"--cells {cells} must be a multiple of {seeds}"
    grid = (
        f'model = ["twin:nosuchthing"]\nseed = {list(range(seeds))}\nn_resamples = {list(range(10, 10 + resamples))}\n'
    )
    path.write_text(f"{HEAD}[grid]\n{grid}{TABLES}")
    return path


def expansion_sweep(path: Path) -> Path:
    models = [f"m{i}" for i in range(150)]
    cells = "".join(f'[[cell]]\nmodel = "m{i % 150}"\nseed = {i // 150}\nn_resamples = 70\n' for i in range(5000))
    grid = f"model = {models}\nseed = {list(range(100))}\n".replace("'", '"')
    path.write_text(f"{HEAD}[grid]\n{grid}{cells}{TABLES}")
    return path


def driver(cells: int, tmp: Path) -> dict:
    """One sweep of ``cells`` failing cells: its wall time, the cells' own seconds, and the span between the
    first and the last progress report (the cells' loop: from the first cell's start to the last cell's
    outcome written), so the driver's cost per cell in the loop is told apart from its fixed costs (reading
    the sweep file and OUT before; the manifest, table and page after)."""
    from geoprobe.sweep import run_sweep

    spec = failing_sweep(tmp / f"s{cells}.toml", cells)
    lines: list[str] = []
    marks: list[float] = []
    t0 = time.perf_counter()
    manifest = run_sweep(
        spec, out=tmp / f"out{cells}", say=lines.append, progress=lambda *a: marks.append(time.perf_counter())
    )
    wall = time.perf_counter() - t0
    own = sum(c.seconds or 0.0 for c in manifest.cells)
    failed = sum(c.status == "failed" for c in manifest.cells)
    assert failed == cells, f"{failed} of {cells} cells failed"
    loop = marks[-1] - marks[0]
    return {
        "cells": cells,
        "wall": wall,
        "cells_s": own,
        "fixed": wall - loop,
        "driver_ms": 1000 * (loop - own) / cells,
        "overall_ms": 1000 * (wall - own) / cells,
    }


def expansion(tmp: Path) -> dict:
    from geoprobe.sweep import read_sweep

    spec = expansion_sweep(tmp / "expand.toml")
    t0 = time.perf_counter()
    s = read_sweep(spec)
    try:
        from geoprobe.sweep import make_plan

        n = len(make_plan(s).cells)
    except ImportError:  # a geoprobe before plans: what its driver did with the file (cells, then the digest)
        n = len(s.cells())
        s.digest()
    return {"cells": n, "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, nargs="+", default=[10, 1000, 20000])
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose geoprobe is timed")
    ap.add_argument("--no-write", action="store_true", help="print only; do not touch docs/benchmarks.md")
    ap.add_argument("--skip-expansion", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(args.root))
    sys.path.insert(1, str(ROOT))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import geoprobe
    from benchmarks._machine import timed

    print(f"geoprobe from {Path(geoprobe.__file__).parent}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "warm").mkdir()
        driver(10, Path(d) / "warm")  # imports and caches, untimed
        for n in args.cells:
            _, other, r = timed(lambda n=n: driver(n, Path(d)))
            r["other"] = other
            rows.append(r)
            print(
                f"{n:>6} cells: {r['wall']:.1f} s wall, cells' own {r['cells_s']:.1f} s, fixed {r['fixed']:.1f} s, "
                f"driver {r['driver_ms']:.2f} ms a cell in the loop ({r['overall_ms']:.1f} ms with the fixed costs; "
                f"other processes {other or 0:.2f} CPUs)",
                flush=True,
            )
        exp = None if args.skip_expansion else expansion(Path(d))
    if exp is not None:
        print(f"expansion: {exp['cells']} cells in {exp['seconds']:.2f} s", flush=True)
    if args.no_write:
        return
    from benchmarks._doc import replace_section

    body = (
        f"`python benchmarks/bench_sweep_driver.py` ({datetime.now():%Y-%m-%d}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}). "
        "Cells that all fail at once (an unknown twin), "
        "`--executor local`, after an untimed warm-up sweep. The driver's own time per cell = (the span from the "
        "first cell's start to the last outcome written − the cells' own seconds) ÷ cells; its fixed costs (reading "
        "the file and OUT before, the manifest, table and page after) apart, and both together per cell. Target: "
        "flat, ≤ 50 ms.\n\n| cells | wall (s) | the cells' own (s) | fixed (s) | driver per cell (ms) | "
        "with the fixed costs (ms) | other processes (CPUs) |\n|---|---|---|---|---|---|---|\n"
        + "".join(
            f"| {r['cells']:,} | {r['wall']:.1f} | {r['cells_s']:.1f} | {r['fixed']:.1f} | {r['driver_ms']:.2f} | "
            f"{r['overall_ms']:.1f} | {r['other'] or 0:.2f} |\n"
            for r in rows
        )
    )
    if exp is not None:
        body += (
            f"\nExpansion of a sweep file of a 15,000-cell grid (150 models × 100 seeds) and 5,000 `[[cell]]` tables "
            f"(each a grid cell's values and its own `n_resamples`): read, made into {exp['cells']:,} cells and every "
            f"cell checked in **{exp['seconds']:.2f} s** (target ≤ 2 s).\n"
        )
    replace_section(ROOT / "docs" / "benchmarks.md", "bench_sweep_driver", "The sweep driver's own cost per cell", body)


if __name__ == "__main__":
    main()
