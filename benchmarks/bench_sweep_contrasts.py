"""What the paired contrasts, emergence and tracking add to a scan sweep's wall time (issue 37; target ≤ 20 %).

The realistic sweep: every checkpoint of an offline trajectory (``geoprobe trajectory --steps 3000 --layers 2
--hidden-size 64``: 14 checkpoints, 0 … 3000) scanned on one shared prompt file of 75 prompts (``geoprobe
sample`` with the final checkpoint), with ``[capture] attention = "distribution"`` (routing stability needs
it), geoprobe's scan defaults otherwise. Timed:

1. ``geoprobe sweep`` without contrasts (``--contrast-resamples 0``), a fresh process: the sweep's wall time;
2. the same with contrasts (``--contrast-resamples N``) into another directory: the whole difference, for a
   check (it carries the noise of two sweeps on a shared machine);
3. in this process, on the first sweep's directory with geoprobe already imported, what run.py adds after the
   table: ``series_contrasts`` (reading every cell's results and capture, the paired bootstrap, emergence),
   writing sweep.parquet again with the contrast rows and emergence.parquet, and the page's extra figures
   (the page with them minus the page without). This is the number held to the target.

    python benchmarks/bench_sweep_contrasts.py                               # trains the trajectory (~5 min) first
    python benchmarks/bench_sweep_contrasts.py --trajectory /tmp/tr14 --prompts /tmp/p14.jsonl
    python benchmarks/bench_sweep_contrasts.py --trajectory /tmp/tr14 --resamples 200 --no-write
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def geoprobe(*args: str) -> tuple[float, float]:
    """Run ``python -m geoprobe ARGS`` (its output kept quiet); its wall time and CPU time (user + system);
    fail loudly."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "geoprobe", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"geoprobe {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - t0, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def sweep_file(path: Path, trajectory: Path, prompts: Path) -> tuple[Path, int]:
    steps = sorted(int(p.name[4:]) for p in (trajectory / "checkpoints").iterdir() if p.name.startswith("step"))
    revisions = ", ".join(f'"{trajectory / "checkpoints" / f"step{s}"}"' for s in steps)
    path.write_text(
        '[sweep]\nexperiment = "scan"\n[grid]\nmodel = ["trajectory-2x64"]\n'
        f'revision = [{revisions}]\n[capture]\nattention = "distribution"\n[prompts]\nfile = "{prompts}"\n'
    )
    return path, len(steps)


def added(out: Path, resamples: int) -> dict:
    """The in-process cost of what run.py does after the table, on the finished sweep in ``out``."""
    from geoprobe.sweep.contrasts import series_contrasts
    from geoprobe.sweep.emergence import write_emergence
    from geoprobe.sweep.manifest import read_manifest
    from geoprobe.sweep.report import write_page
    from geoprobe.sweep.table import ROW_COLUMNS, table_rows, write_table

    manifest = read_manifest(out)
    rows = table_rows(manifest, out)  # what run.py has already read for the table: untimed
    write_page(manifest, out, rows)  # plotly's first page (imports, templates): the sweep has paid it, untimed
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    table = series_contrasts(out, rows=rows, n_resamples=resamples)
    t1 = time.perf_counter()
    heads: dict = {}
    for r in rows:
        heads.setdefault(r["cell"], {k: v for k, v in r.items() if k not in ROW_COLUMNS})
    write_table(manifest, out, rows + table.parquet_rows(heads))
    write_emergence(table.emergence, out, manifest.uid)
    t2, cpu2 = time.perf_counter(), time.process_time()
    write_page(manifest, out, rows)
    t3, cpu3 = time.perf_counter(), time.process_time()
    write_page(manifest, out, rows, table)
    t4, cpu4 = time.perf_counter(), time.process_time()
    return {
        "cpu": (cpu2 - cpu0) + (cpu4 - cpu3) - (cpu3 - cpu2),
        "contrasts": t1 - t0,
        "writes": t2 - t1,
        "page": (t4 - t3) - (t3 - t2),
        "rows": len(table.rows),
        "emergence": len(table.emergence),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trajectory", type=Path, help="a geoprobe trajectory directory (default: train one)")
    ap.add_argument("--prompts", type=Path, help="the shared prompt file (default: sampled with the final step)")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--no-write", action="store_true", help="print only; do not touch docs/benchmarks.md")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from benchmarks._machine import timed

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        traj = args.trajectory
        if traj is None:
            traj = tmp / "traj"
            geoprobe(
                "trajectory",
                "--steps",
                "3000",
                "--layers",
                "2",
                "--hidden-size",
                "64",
                "--threads",
                "1",
                "--out",
                str(traj),
            )
        steps = sorted(int(p.name[4:]) for p in (traj / "checkpoints").iterdir() if p.name.startswith("step"))
        prompts = args.prompts
        if prompts is None:
            prompts = tmp / "prompts.jsonl"
            final = traj / "checkpoints" / f"step{steps[-1]}"
            geoprobe("sample", "--model", str(final), "--prompts", "mixed", "--out", str(prompts))
        spec, cells = sweep_file(tmp / "s.toml", traj.resolve(), prompts.resolve())
        _, other_a, (plain, plain_cpu) = timed(
            lambda: geoprobe("sweep", str(spec), "--out", str(tmp / "a"), "--contrast-resamples", "0")
        )
        print(
            f"sweep without contrasts: {plain:.1f} s, {plain_cpu:.1f} CPU s ({cells} cells; others {other_a or 0:.2f})"
        )
        _, other_b, (both, both_cpu) = timed(
            lambda: geoprobe("sweep", str(spec), "--out", str(tmp / "b"), "--contrast-resamples", str(args.resamples))
        )
        print(f"sweep with contrasts: {both:.1f} s, {both_cpu:.1f} CPU s (other processes {other_b or 0:.2f} CPUs)")
        _, other_c, r = timed(lambda: added(tmp / "a", args.resamples))
        extra = r["contrasts"] + r["writes"] + r["page"]
        print(
            f"added in process: contrasts and emergence {r['contrasts']:.2f} s, writes {r['writes']:.2f} s, page "
            f"{r['page']:.2f} s: {extra:.2f} s = {100 * extra / plain:.1f} % of the sweep's wall; {r['cpu']:.2f} CPU s "
            f"= {100 * r['cpu'] / plain_cpu:.1f} % of its CPU ({r['rows']} rows, {r['emergence']} emergence rows; "
            f"other processes {other_c or 0:.2f} CPUs)"
        )
    if args.no_write:
        return
    from benchmarks._doc import replace_section

    body = (
        f"`python benchmarks/bench_sweep_contrasts.py` ({datetime.now():%Y-%m-%d}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}). "
        f"A scan sweep of the {cells} checkpoints of `geoprobe trajectory --steps 3000 --layers 2 --hidden-size 64` on "
        f"one shared file of 75 prompts (`geoprobe sample` with the final checkpoint), `[capture] attention = "
        f'"distribution"`, scan defaults; contrasts on {args.resamples:,} resamples (the PCA-based metrics on the '
        "first 200). Added = what run.py does after the table, timed in process on the finished sweep: "
        "`series_contrasts` (every cell's results and capture read, the paired bootstrap, emergence), sweep.parquet "
        "and emergence.parquet written, and the page's extra figures. Target: ≤ 20 % of the sweep. Wall times on "
        "a machine shared with other processes (their load in the last column) move by tens of percent between "
        "runs; CPU seconds (user + system of the process) move far less, and the CPU ratio is the one to read.\n\n"
        "| | wall (s) | CPU (s) | other processes (CPUs) |\n|---|---|---|---|\n"
        f"| `geoprobe sweep` without contrasts (`--contrast-resamples 0`) | {plain:.1f} | {plain_cpu:.1f} | "
        f"{other_a or 0:.2f} |\n"
        f"| `geoprobe sweep` with contrasts (another directory) | {both:.1f} | {both_cpu:.1f} | {other_b or 0:.2f} |\n"
        f"| added: contrasts and emergence | {r['contrasts']:.2f} | | {other_c or 0:.2f} |\n"
        f"| added: sweep.parquet and emergence.parquet written again | {r['writes']:.2f} | | |\n"
        f"| added: the page's contrast, tracking and emergence figures | {r['page']:.2f} | | |\n"
        f"| **added, all** | **{extra:.2f} ({100 * extra / plain:.1f} % of the sweep)** | **{r['cpu']:.2f} "
        f"({100 * r['cpu'] / plain_cpu:.1f} % of the sweep)** | |\n\n"
        f"{r['rows']:,} contrast and tracking rows, {r['emergence']} emergence rows.\n"
    )
    replace_section(
        ROOT / "docs" / "benchmarks.md", "bench_sweep_contrasts", "Paired contrasts and emergence in a sweep", body
    )


if __name__ == "__main__":
    main()
