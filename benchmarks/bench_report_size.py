"""The HTML a sweep writes (issue 39 case 8): one small twin sweep (``--cells`` scan cells of tiny twins,
builtin prompts, few resamples; no paired contrasts), then the bytes of one cell's page, of the sweep's page,
of every page together and of every page plus the shared plotly.js, and that total extrapolated to 1,000 cells.

Before issue 39 every page inlined plotly.js (4.8 MB); since, a sweep writes it once as OUT/plotly.min.js and
its pages load it (a single run's report.html still inlines it: one file that opens offline).

    python benchmarks/bench_report_size.py            # 4 cells in a temporary directory
    python benchmarks/bench_report_size.py --cells 2 --out /tmp/sizes
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GRID = {2: 'model = ["twin:llama", "twin:qwen3"]\nseed = [0]', 4: 'model = ["twin:llama", "twin:qwen3"]\nseed = [0, 1]'}


def measure(out: Path) -> dict[str, float]:
    pages = sorted(out.rglob("*.html"))
    cells = [p for p in pages if "cells" in p.relative_to(out).parts]
    scripts = sorted(out.rglob("*.js"))
    html = sum(p.stat().st_size for p in pages)
    shared = sum(p.stat().st_size for p in scripts)
    cell = max(p.stat().st_size for p in cells)
    return {
        "cells": len(cells),
        "cell page": cell,
        "sweep page": (out / "sweep.html").stat().st_size,
        "all pages": html,
        "shared plotly.js": shared,
        "all pages + plotly.js": html + shared,
        "1,000 cells (extrapolated)": 1000 * cell + (out / "sweep.html").stat().st_size + shared,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, choices=sorted(GRID), default=4)
    ap.add_argument("--out", type=Path, default=None, help="where to write the sweep (default: a temporary folder)")
    args = ap.parse_args()
    from geoprobe.sweep import run_sweep
    from tests.sweep.kit import sweep_file

    with tempfile.TemporaryDirectory() as tmp:
        base = args.out or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        run_sweep(sweep_file(base, GRID[args.cells]), out=base / "out", contrast_resamples=0)
        took = time.perf_counter() - t
        sizes = measure(base / "out")
    print(f"{args.cells}-cell twin sweep in {took:.0f} s")
    print("| what | bytes |\n|---|---:|")
    for k, v in sizes.items():
        print(f"| {k} | {v:,.0f} |")


if __name__ == "__main__":
    main()
