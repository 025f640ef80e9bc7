"""Load benchmark: five models scanned one after another in one process keep peak RSS bounded.

Target (issue 8, part 8): no leaked models, hooks or caches. Measured side by side in one run:

1. **alone**: each model scanned in its own fresh process; its peak RSS (``ru_maxrss``).
2. **in sequence**: one fresh process scans all of them one after another, twice over (two
   passes), as a researcher sweeping models from Jupyter would: load → scan → save capture,
   results.json, report.html → drop the model. After each scan it collects garbage and records
   the RSS, the peak RSS during that scan (a 20 ms sampler), and whether the model object is
   gone (a weak reference to the bridge must be dead).

Pass when: every model was freed; the sequence's peak ≤ 1.15 × the largest alone peak; and the
RSS after the second pass ≤ the RSS after the first + 64 MiB (a per-scan leak would add itself
five times). RSS is read after ``malloc_trim``: glibc otherwise keeps the freed pages of a
1.6 GB model in its arenas (the RSS right after gc is shown too). The first pass's growth is
one-off: each new architecture imports its modelling code and warms its kernels once.

    python benchmarks/bench_load.py            # writes its table into docs/benchmarks.md
    python benchmarks/bench_load.py --no-write
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

MODELS = ("smollm2-135m", "gemma-3-270m", "twin:pythia-410m:full", "twin:phi-2:tiny", "twin:mistral-7b:tiny")
MiB = 2**20


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


class _PeakSampler:
    """Highest RSS seen every ``interval`` seconds between start() and stop()."""

    def __init__(self, interval: float = 0.02):
        self.interval, self.peak, self._stop = interval, 0, threading.Event()

    def __enter__(self):
        self.peak = _rss()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())


def _trim() -> None:
    """Hand freed heap pages back to the OS (glibc keeps them in its arenas otherwise, so RSS
    after a freed 1.6 GB model says more about the allocator than about leaks)."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # not glibc
        pass


def scan_once(model: str, out: Path) -> dict:
    """Load, scan on the builtin prompts, write capture/results/report, drop the model."""
    import gc
    import weakref

    from geoprobe.models.loading import load_model
    from geoprobe.scan import ScanConfig, scan

    t = time.perf_counter()
    m = load_model(model)
    ref = weakref.ref(m.bridge)
    result, cap = scan(m, None, ScanConfig().updated(prompts="builtin"), return_capture=True)
    cap.save(out / "capture")
    result.save(out / "results.json")
    result.report(out / "report.html")
    seconds = time.perf_counter() - t
    del m, result, cap
    gc.collect()
    return {"model": model, "seconds": seconds, "freed": ref() is None}


def child(models: list[str]) -> None:
    """Run in a fresh process: scan ``models`` in turn, print one JSON line of measurements."""
    import gc
    import resource

    gc.collect()
    rows = [{"model": "(start)", "retained": _rss(), "peak": _rss()}]
    with tempfile.TemporaryDirectory() as d:
        for i, model in enumerate(models):
            with _PeakSampler() as s:
                row = scan_once(model, Path(d) / f"{i}")
            held = _rss()
            _trim()
            rows.append({**row, "peak": s.peak, "held": held, "retained": _rss()})
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    print(json.dumps({"rows": rows, "maxrss": maxrss}))


def run_child(models: list[str]) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    r = subprocess.run([sys.executable, __file__, "--child", ",".join(models)], capture_output=True, text=True, env=env)
    if r.returncode:
        raise SystemExit(f"child scan of {models} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--doc", default=str(Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.child:
        child(args.child.split(","))
        return
    import torch

    models = args.models.split(",")
    alone = {m: run_child([m]) for m in models}
    seq = run_child([*models, *models])
    rows = seq["rows"]
    alone_peak = {m: alone[m]["maxrss"] for m in models}
    worst = max(alone_peak.values())
    pass1, pass2 = rows[len(models)], rows[-1]
    freed = all(r.get("freed", True) for r in rows)
    ok_peak = seq["maxrss"] <= 1.15 * worst
    growth = pass2["retained"] - pass1["retained"]
    ok_retained = growth <= 64 * MiB
    lines = [
        f"Command: `python benchmarks/bench_load.py --models {','.join(models)}`",
        "",
        f"Run {datetime.now().isoformat(timespec='seconds')} on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs; Python {platform.python_version()}, torch {torch.__version__}. Each scan: the builtin "
        "prompt set (160 prompts), every layer, default resamples; capture/, results.json and report.html written.",
        "",
        "| step (one process) | scan s | peak RSS during (MiB) | RSS after, gc'd (MiB) | after malloc_trim "
        "(MiB) | model freed | alone: peak RSS (MiB) |",
        "|---|---|---|---|---|---|---|",
        f"| (process start, before imports) | — | — | — | {rows[0]['retained'] / MiB:.0f} | — | — |",
    ]
    for i, r in enumerate(rows[1:]):
        tag = " (pass 2)" if i >= len(models) else ""
        lines.append(
            f"| {i + 1}. `{r['model']}`{tag} | {r['seconds']:.1f} | {r['peak'] / MiB:.0f} | "
            f"{r['held'] / MiB:.0f} | {r['retained'] / MiB:.0f} | {'yes' if r['freed'] else '**no**'} | "
            f"{alone_peak[r['model']] / MiB:.0f} |"
        )
    lines += [
        "",
        "| target | measured | threshold | result |",
        "|---|---|---|---|",
        f"| every model object freed after its scan (weak reference dead) | "
        f"{sum(r.get('freed', True) for r in rows[1:])} of {len(rows) - 1} | all | **{'PASS' if freed else 'FAIL'}** |",
        f"| peak RSS, {len(rows) - 1} scans in one process / largest single-model process | "
        f"{seq['maxrss'] / MiB:.0f} / "
        f"{worst / MiB:.0f} MiB = {seq['maxrss'] / worst:.3f} | ≤ 1.15 | **{'PASS' if ok_peak else 'FAIL'}** |",
        f"| RSS after malloc_trim, end of pass 2 − end of pass 1 | {growth / MiB:+.0f} MiB | ≤ +64 MiB | "
        f"**{'PASS' if ok_retained else 'FAIL'}** |",
        "",
    ]
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_write:
        from _doc import replace_section  # benchmarks/ is sys.path[0] when run as a script

        path = Path(args.doc)
        replace_section(path, "bench_load", "Five models in one process (`benchmarks/bench_load.py`, issue 8)", body)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
