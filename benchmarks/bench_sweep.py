"""Sweeps through Ray against the local executor, side by side in one run (issue 30).

The same ``--cells`` scan cells of a twin (``--resamples`` bootstrap resamples make one cell take about
``--target`` seconds) are run three ways, each into its own directory:

1. ``--executor local``: in this process, one cell after another, 1 torch thread;
2. ``--executor ray`` on a cluster of one worker node with 1 CPU (cells one after another, as local);
3. ``--executor ray`` on two worker nodes with 1 CPU each (two cells at a time).

Ray's added time per cell = ((2) − (1)) / cells, against the mean local cell time; the cluster's start
is timed separately (not in (2) or (3)). Scaling = cells per minute of (3) ÷ (2). Every way's table must
equal the local one (each metric within 1e-6), or the benchmark stops.

    python benchmarks/bench_sweep.py                # writes its table into docs/benchmarks.md
    python benchmarks/bench_sweep.py --no-write --cells 4 --resamples 200
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
sys.path.insert(0, str(ROOT))
from benchmarks._doc import replace_section  # noqa: E402
from benchmarks._machine import timed, wait_idle  # noqa: E402

SWEEP = """[sweep]
experiment = "scan"
[grid]
model = ["{model}"]
seed = {seeds}
[prompts]
set = "builtin"
[analyses]
n_resamples = {resamples}
pca_resamples = {resamples}
null_draws = 50
n_permutations = {resamples}
ci_layers = "all"
init_baseline = false
"""


def cluster(workers: int):
    import ray
    from ray.cluster_utils import Cluster

    t0 = time.perf_counter()
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    for _ in range(workers):
        c.add_node(num_cpus=1)
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    started = time.perf_counter() - t0

    @ray.remote(num_cpus=1)
    def warm() -> int:  # each worker process imports what a cell needs, as any long-lived worker pool would
        import transformers  # noqa: F401

        import geoprobe.sweep.cell  # noqa: F401

        return os.getpid()

    t1 = time.perf_counter()
    ray.get([warm.remote() for _ in range(workers)])
    return c, started, time.perf_counter() - t1


def timed_sweep(spec: Path, out: Path, executor: str, idle: float) -> tuple[float, float | None, object]:
    """(wall s, other processes' CPUs meanwhile, the manifest), after waiting up to ``idle`` s for quiet."""
    from geoprobe.sweep import run_sweep

    wait_idle(idle)
    wall, other, m = timed(lambda: run_sweep(spec, out=out, executor=executor))
    if m.counts()["done"] != len(m.cells):
        raise SystemExit(f"{executor}: {m.counts()}")
    return wall, other, m


def same_tables(a: Path, b: Path) -> None:
    import numpy as np
    import pandas as pd

    ta, tb = (pd.read_parquet(p / "sweep.parquet").sort_values(["cell", "metric", "layer"]) for p in (a, b))
    for col in ("estimate", "low", "high", "null"):
        np.testing.assert_allclose(ta[col].astype(float), tb[col].astype(float), atol=1e-6, equal_nan=True)


def med(manifest) -> str:
    import statistics

    return f"{statistics.median(c.seconds for c in manifest.cells):.2f}"


def fmt(other: float | None) -> str:
    return "n/a" if other is None else f"{other:.2f}"


def main() -> None:
    import ray
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="twin:llama-3.2-1b")
    ap.add_argument("--cells", type=int, default=12)
    ap.add_argument("--resamples", type=int, default=3000)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--wait-idle", type=float, default=60.0, help="seconds to wait for the machine to go quiet")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"  # the Ray workers' BLAS too
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    spec = tmp / "s.toml"
    spec.write_text(SWEEP.format(model=args.model, seeds=list(range(args.cells)), resamples=args.resamples))
    load_before = os.getloadavg()[0]
    local_s, local_o, m = timed_sweep(spec, tmp / "local", "local", args.wait_idle)
    cell_s = sum(c.seconds for c in m.cells) / len(m.cells)
    c1, start1, warm1 = cluster(1)
    ray1_s, ray1_o, m1 = timed_sweep(spec, tmp / "ray1", "ray", args.wait_idle)
    ray.shutdown()
    c1.shutdown()
    c2, start2, warm2 = cluster(2)
    ray2_s, ray2_o, m2 = timed_sweep(spec, tmp / "ray2", "ray", args.wait_idle)
    ray.shutdown()
    c2.shutdown()
    same_tables(tmp / "local", tmp / "ray1")
    same_tables(tmp / "local", tmp / "ray2")
    added = (ray1_s - local_s) / args.cells
    scaling = ray1_s / ray2_s
    lines = [
        f"Command: `python benchmarks/bench_sweep.py --model {args.model} --cells {args.cells} "
        f"--resamples {args.resamples}`",
        "",
        f"Run {datetime.now().isoformat(timespec='seconds')} on {platform.processor() or platform.machine()} "
        f"({os.cpu_count()} cores), Python {platform.python_version()}, torch {torch.__version__}, Ray "
        f"{ray.__version__}; scan cells of {args.model} on the builtin prompts, 1 torch thread per cell; load "
        f"average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after. Every executor's sweep.parquet equals "
        "the local one (each metric within 1e-6). *other CPU*: CPUs' worth of time that processes outside the "
        "benchmark (and its Ray) used meanwhile; above ~0.2 the timing is contended.",
        "",
        "| way | cells | wall s | cells / min | median cell s (inside the cell) | other CPU |",
        "|---|---|---|---|---|---|",
        f"| local, in-process | {args.cells} | {local_s:.1f} | {60 * args.cells / local_s:.2f} | {med(m)} | "
        f"{fmt(local_o)} |",
        f"| Ray, 1 worker × 1 CPU | {args.cells} | {ray1_s:.1f} | {60 * args.cells / ray1_s:.2f} | {med(m1)} | "
        f"{fmt(ray1_o)} |",
        f"| Ray, 2 workers × 1 CPU | {args.cells} | {ray2_s:.1f} | {60 * args.cells / ray2_s:.2f} | {med(m2)} | "
        f"{fmt(ray2_o)} |",
        "",
        f"- Mean local cell: {cell_s:.2f} s. Ray's added time per cell (1 worker − local) / cells: {added:.2f} s "
        f"= {100 * added / cell_s:.1f} % of a cell of this length, {100 * added / 10:.1f} % of a 10-second cell "
        "(target ≤ 5 %).",
        f"- Cluster start (head + worker nodes, not in the times above): {start1:.1f} s with one worker node, "
        f"{start2:.1f} s with two; then each worker process's first import of torch, transformers and geoprobe "
        f"(one warm-up task per worker): {warm1:.1f} s and {warm2:.1f} s.",
        f"- Scaling, 2 workers ÷ 1 worker (cells per minute): {scaling:.2f}× (target ≥ 1.8×).",
    ]
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_write:
        replace_section(
            Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md",
            "bench_sweep",
            "Sweeps: Ray against the local executor (`benchmarks/bench_sweep.py`, issue 30)",
            body,
        )


if __name__ == "__main__":
    main()
