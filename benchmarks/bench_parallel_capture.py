"""Data-parallel capture benchmark (issue 30, part 5): 2 Ray actors × 1 thread against one process × 2
threads on the same prompts, and a scale check of 10,000+ prompts.

1. **Ratio.** ``--n-prompts`` passages of real text (the bundled corpora, 16 to 64 tokens each, every
   domain) through ``--model`` (default smollm2-135m): ``geoprobe.capture.capture`` in this process on
   2 torch threads, and ``DataParallel(workers=2, threads=1)`` on a local Ray of 2 CPUs, its workers
   started, loaded and warmed (one small capture) before any timing; the two alternate ``--rounds``
   times in one run. Reported: best and median wall time of each, prompts/s, the ratio of the best
   times, and the CPUs' worth of time other processes used meanwhile (the machine may be shared).
2. **Scale.** ``--scale-prompts`` (default 1,000 and 10,000) short synthetic prompts through the tiny
   twin ``--scale-model`` on the same two workers (a fresh pool per count): wall time, prompts/s, each
   worker's peak RSS (VmHWM, reported with every shard it returns) and the driver's (VmHWM reset before
   the run; the driver holds the whole capture), beside the same capture in one process on 2 threads.
   The smallest count's arrays are compared with the local capture's.

    python benchmarks/bench_parallel_capture.py             # about 10 min on 2 CPUs; writes docs/benchmarks.md
    python benchmarks/bench_parallel_capture.py --no-write --n-prompts 64 --rounds 1 --scale-prompts 1000
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks._doc import replace_section  # noqa: E402
from benchmarks._machine import timed, wait_idle  # noqa: E402


def driver_peak_reset() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := the current RSS
    except OSError:
        pass


def max_diff(a, b, names=("values", "keys", "attn_entropy", "next_entropy", "next_top_probs")) -> float:
    import numpy as np

    return max(float(np.nanmax(np.abs(getattr(a, n).astype(float) - getattr(b, n).astype(float)))) for n in names)


# ------------------------------------------------------------------ the two parts
def corpus_prompts(model, n: int) -> list[str]:
    from geoprobe.corpora import available_domains, candidates

    domains = [d for d, why in available_domains().items() if why is None]
    per = -(-n // len(domains))
    texts = [p.text for p in candidates(domains, per, tokenizer=model.tokenizer, min_tokens=16, max_tokens=64)]
    if len(texts) < n:
        raise SystemExit(f"the corpora gave {len(texts)} passages; need {n}")
    return texts[:n]


def watcher(tally, peaks: dict[int, float]):
    """An on_worker that feeds ``tally`` and keeps each worker's highest reported peak RSS."""

    def on_worker(e: dict) -> None:
        tally(e)
        if e["event"] == "shard":
            peaks[e["pid"]] = max(peaks.get(e["pid"], 0.0), e["peak_rss_mib"])

    return on_worker


VARIANTS = (
    ("local", "one process, 2 torch threads"),
    ("ray", "2 Ray actors × 1 thread"),
    ("local-1", "(context) one process, 1 torch thread"),
)


def ratio_part(args, log) -> dict:
    import torch

    from geoprobe.capture import CaptureConfig, capture
    from geoprobe.capture.parallel import DataParallel
    from geoprobe.capture.shard_worker import WorkerTally
    from geoprobe.models.loading import LoadOptions

    load = LoadOptions(args.model)
    model = load.load()
    prompts = corpus_prompts(model, args.n_prompts)
    config = CaptureConfig(batch_size=args.batch_size)
    n_tokens = sum(len(model.tokenizer(p)["input_ids"]) for p in prompts)
    times: dict[str, list[tuple[float, float | None]]] = {v: [] for v, _ in VARIANTS}
    tally, peaks = WorkerTally(), {}
    dp = DataParallel(workers=2, threads=1, chunk_batches=args.chunk_batches)
    with dp.pool(load, model=model, on_worker=watcher(tally, peaks)) as pool:
        t0 = time.perf_counter()
        pool.wait_ready()
        start_s = time.perf_counter() - t0
        pool.capture(prompts[: 4 * args.batch_size], config)  # warm both workers
        capture(model, prompts[: args.batch_size], config)  # and this process
        caps = {}
        order = [v for v, _ in VARIANTS]
        for r in range(args.rounds):
            for variant in order if r % 2 == 0 else order[::-1]:
                wait_idle(args.wait_idle)
                torch.set_num_threads(1 if variant == "local-1" else 2)
                if variant == "ray":
                    wall, other, caps[variant] = timed(lambda: pool.capture(prompts, config))
                else:
                    wall, other, caps[variant] = timed(lambda: capture(model, prompts, config))
                times[variant].append((wall, other))
                log(f"round {r + 1} {variant}: {wall:.2f} s (other CPU {fmt_other(other)})")
    return dict(
        model=args.model,
        n_prompts=len(prompts),
        n_tokens=n_tokens,
        batch_size=args.batch_size,
        times=times,
        start_s=start_s,
        worker_peaks=sorted(peaks.values()),
        diff=max_diff(caps["ray"], caps["local"]),
        diff1=max_diff(caps["ray"], caps["local-1"]),
        tally=str(tally),
    )


def scale_part(args, log) -> list[dict]:
    import torch

    from geoprobe.capture import CaptureConfig, capture
    from geoprobe.capture.parallel import DataParallel
    from geoprobe.capture.shard_worker import WorkerTally, peak_rss_mib
    from geoprobe.models.loading import LoadOptions

    load = LoadOptions(args.scale_model)
    model = load.load()
    config = CaptureConfig(batch_size=args.batch_size)
    rows = []
    for n in args.scale_prompts:
        prompts = [
            f"Prompt {i}: the {'quick ' * (i % 9)}brown fox number {i * 7919 % 10007} jumps over" for i in range(n)
        ]
        tally, peaks = WorkerTally(), {}
        dp = DataParallel(workers=2, threads=1, chunk_batches=args.chunk_batches)
        with dp.pool(load, model=model, on_worker=watcher(tally, peaks)) as pool:
            pool.wait_ready()
            wait_idle(args.wait_idle)
            driver_peak_reset()
            wall, other, got = timed(lambda: pool.capture(prompts, config))
            driver_peak = peak_rss_mib()
        row = dict(
            n=n,
            wall=wall,
            other=other,
            local_wall=None,
            diff=None,
            worker_peaks=sorted(peaks.values()),
            driver_peak=driver_peak,
            array_mib=sum(getattr(got, k).nbytes for k in ("values", "keys", "attn_entropy", "w_k")) / 2**20,
            tally=str(tally),
        )
        if n == min(args.scale_prompts):  # the arrays against one process's, on one thread as the workers
            torch.set_num_threads(1)
            wait_idle(args.wait_idle)
            row["local_wall"], _, ref = timed(lambda: capture(model, prompts, config))
            row["diff"] = max_diff(got, ref)
        rows.append(row)
        log(f"scale {n}: ray {wall:.1f} s, local {row['local_wall']} s, worker peaks {row['worker_peaks']}")
    return rows


# ------------------------------------------------------------------ report
def machine() -> str:
    import psutil
    import ray
    import torch
    import transformers

    cpu = platform.processor() or platform.machine()
    if Path("/proc/cpuinfo").exists():
        cpu = (re.findall(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text()) or [cpu])[0]
    return (
        f"{cpu}, {os.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.1f} GiB RAM; Python "
        f"{platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
        f"Ray {ray.__version__}"
    )


def fmt_other(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def report(args, command: str, ratio: dict | None, scale: list[dict], load_avg: tuple) -> str:
    out = [
        f"Command: `{command}`\n",
        f"Run {datetime.now().isoformat(timespec='seconds')} on {machine()}; load average "
        f"{load_avg[0]:.2f} before, {os.getloadavg()[0]:.2f} after. A local Ray of {os.cpu_count()} CPUs "
        "(`ray.init(num_cpus=...)`), started by the benchmark; workers `DataParallel(workers=2, threads=1, "
        f"chunk_batches={args.chunk_batches})` (None: four shards per worker, at most 8 batches each), 2 "
        "shards in flight on each. *other CPU*: CPUs' worth of time "
        "that processes outside the benchmark (and its Ray) used during the pass; above ~0.2 the timing "
        "is contended.\n",
    ]
    if ratio is not None:
        best = {v: min(t for t, _ in ratio["times"][v]) for v in ratio["times"]}
        out.append(
            f"#### 2 actors × 1 thread vs one process × 2 threads ({ratio['model']})\n\n"
            f"{ratio['n_prompts']} corpus passages of 16–64 tokens ({ratio['n_tokens']} tokens in all), batch "
            f"size {ratio['batch_size']}, {args.rounds} rounds alternating the variants; workers started and "
            f"loaded in {ratio['start_s']:.1f} s (not timed), then warmed with one small capture.\n\n"
            "| variant | best s | median s | prompts/s (best) | other CPU (each pass) |\n|---|---|---|---|---|\n"
        )
        for v, label in VARIANTS:
            ts = [t for t, _ in ratio["times"][v]]
            others = ", ".join(fmt_other(o) for _, o in ratio["times"][v])
            out.append(
                f"| {label} | {best[v]:.2f} | {statistics.median(ts):.2f} | "
                f"{ratio['n_prompts'] / best[v]:.1f} | {others} |\n"
            )
        out.append(
            f"\n**Ratio (one process × 2 threads time / 2 actors × 1 thread time, best of each): "
            f"{best['local'] / best['ray']:.2f}×** (one process × 1 thread / 2 actors: "
            f"{best['local-1'] / best['ray']:.2f}×). Largest difference between the Ray capture's arrays and "
            f"the 2-thread local one's: {ratio['diff']:.1e}; the 1-thread local one's: {ratio['diff1']:.1e} "
            "(the same batches summed in the same order). Workers' peak RSS: "
            f"{', '.join(f'{p:.0f}' for p in ratio['worker_peaks'])} MiB; {ratio['tally']}.\n\n"
        )
    if scale:
        out.append(
            f"#### Scale: {args.scale_model} on 2 actors × 1 thread\n\n"
            "| prompts | Ray s | prompts/s | other CPU | one process × 1 thread s | worker peak RSS MiB | "
            "driver peak RSS MiB | capture arrays MiB | max diff |\n|---|---|---|---|---|---|---|---|---|\n"
        )
        for r in scale:
            local = "—" if r["local_wall"] is None else f"{r['local_wall']:.1f}"
            diff = "—" if r["diff"] is None else f"{r['diff']:.1e}"
            out.append(
                f"| {r['n']:,} | {r['wall']:.1f} | {r['n'] / r['wall']:.0f} | {fmt_other(r['other'])} | {local} | "
                f"{', '.join(f'{p:.0f}' for p in r['worker_peaks'])} | {r['driver_peak']:.0f} | "
                f"{r['array_mib']:.1f} | {diff} |\n"
            )
        out.append(
            "\n*worker peak RSS*: each worker's VmHWM over its life (imports, model, every shard); "
            "*driver peak*: VmHWM of the benchmark process during the Ray capture (reset before it; the "
            "driver holds the model, the prompts and the whole capture); *max diff*: largest absolute "
            "difference from the one-process capture on one thread (for the smallest count).\n\n"
        )
    return "".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--n-prompts", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--chunk-batches", type=int, default=None, help="batches per shard (default: DataParallel's)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scale-model", default="twin:llama-3.2-1b")
    ap.add_argument("--scale-prompts", default="1000,10000", help="comma-separated counts ('' to skip)")
    ap.add_argument("--no-ratio", action="store_true")
    ap.add_argument("--wait-idle", type=float, default=30.0, help="seconds to wait for the machine to go quiet")
    ap.add_argument("--doc", type=Path, default=ROOT / "docs" / "benchmarks.md")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    args.scale_prompts = [int(x) for x in args.scale_prompts.split(",") if x.strip()]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import ray

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    load_avg = os.getloadavg()
    ray.init(address="local", num_cpus=os.cpu_count(), log_to_driver=False, include_dashboard=False)
    try:
        ratio = None if args.no_ratio else ratio_part(args, log)
        scale = scale_part(args, log) if args.scale_prompts else []
    finally:
        ray.shutdown()
    command = "python benchmarks/bench_parallel_capture.py " + " ".join(sys.argv[1:])
    body = report(args, command.strip(), ratio, scale, load_avg)
    print(body)
    if not args.no_write:
        replace_section(
            args.doc, "bench_parallel_capture", "Data-parallel capture (`benchmarks/bench_parallel_capture.py`)", body
        )


if __name__ == "__main__":
    main()
