"""What else the machine was doing while a benchmark timed something: the CPUs' worth of time that
processes outside the benchmark's own process tree used, and waiting for the machine to go quiet. The
machines here are shared; a timing taken while others used the CPUs is reported as contended."""

from __future__ import annotations

import os
import time
from pathlib import Path


def cpu_busy() -> float | None:
    """Busy CPU seconds of the whole machine (all processes), from /proc/stat."""
    try:
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    return (sum(f) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")


def tree_cpu() -> float:
    """CPU seconds of this process and every descendant alive now (a local Ray's GCS, raylet, workers)."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def timed(fn) -> tuple[float, float | None, object]:
    """(wall s, CPUs' worth of time that processes outside this tree used meanwhile, fn's value)."""
    busy, own, t = cpu_busy(), tree_cpu(), time.perf_counter()
    value = fn()
    wall = time.perf_counter() - t
    other = None if busy is None else max(0.0, (cpu_busy() - busy) - (tree_cpu() - own)) / wall
    return wall, other, value


def wait_idle(limit: float, cores: float = 0.3) -> None:
    """Sleep (up to ``limit`` s) until other processes use less than ``cores`` CPUs over 2 s."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        busy, own = cpu_busy(), tree_cpu()
        time.sleep(2.0)
        if busy is None or ((cpu_busy() - busy) - (tree_cpu() - own)) / 2.0 < cores:
            return
