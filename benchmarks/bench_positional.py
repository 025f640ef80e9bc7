"""``geoprobe positional`` on SmolLM2-135M at the defaults: wall time and peak memory of the whole
command (a subprocess, so its peak RSS is its own), and of the fit stage alone (per-head fits and
the one-step bootstrap, re-run in-process on the saved windows of a fresh capture at the fit length).
Also prints the head-class counts and the β̂ distribution that docs/positional.md quotes.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_positional.py [--n-prompts 24] [--lengths 16,32,64,128,256]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _doc import replace_section  # benchmarks/ is sys.path[0] when run as a script

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--lengths", default="16,32,64,128,256")
    ap.add_argument("--n-prompts", type=int, default=24)
    ap.add_argument("--n-resamples", type=int, default=200)
    args = ap.parse_args()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [
            sys.executable,
            "-m",
            "geoprobe.cli",
            "positional",
            "--model",
            args.model,
            "--lengths",
            args.lengths,
            "--n-prompts",
            str(args.n_prompts),
            "--n-resamples",
            str(args.n_resamples),
            "--out",
            str(out),
        ]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        if r.returncode:
            sys.exit(f"geoprobe positional failed: {r.stderr}")
        peak_cmd = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        d = json.loads((out / "positional.json").read_text())

    # the fit stage alone, in-process, on a capture at the fit length
    import numpy as np

    from geoprobe.capture import CaptureConfig, capture
    from geoprobe.models import load_model
    from geoprobe.positional.heads import fit_heads
    from geoprobe.positional.profile import distance_windows, token_windows
    from geoprobe.positional.run import rope_of

    T = int(args.lengths.split(",")[-1])
    m = load_model(args.model)
    prompts, _ = token_windows(m.tokenizer, T, args.n_prompts, 0)
    cap = capture(m, prompts, CaptureConfig(attention="distribution", keys=False, key_weights=False, batch_size=8))
    win = distance_windows(cap.attn_pattern, cap.n_tokens, T - 2, 1)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    fit_heads(win.window, win.sink, cap.layers, n_resamples=args.n_resamples, seed=0, rope=rope_of(m))
    fit_s = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    counts, bs = d["class_counts"], d["beta_summary"]
    n_heads = len(d["heads"])
    rows = [
        "| stage | wall (s) | peak RSS (MiB) |",
        "|---|---:|---:|",
        f"| `geoprobe positional` (capture {args.n_prompts} prompts × lengths {args.lengths}, fits, stability, report) "
        f"| {wall:.0f} | {peak_cmd:.0f} |",
        f"| fit stage alone ({n_heads} heads, Δ ≤ {T - 2}, {args.n_resamples} resamples) | {fit_s:.1f} | "
        f"{after:.0f} (process; {after - before:+.0f} during the fits) |",
    ]
    classes = " · ".join(f"{k}: {v}" for k, v in counts.items())
    beta = (
        (
            f"β̂ over {bs['n']} ALiBi-/Gaussian-like heads: median {bs['median']:.2f}, IQR [{bs['q25']:.2f}, "
            f"{bs['q75']:.2f}], range [{bs['min']:.2f}, {bs['max']:.2f}]"
        )
        if bs.get("n")
        else "no fitted head"
    )
    body = (
        "\n".join(rows) + f"\n\nHead classes: {classes}. {beta}.\n\n"
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared with other jobs while measured; "
        f"load average {os.getloadavg()[0]:.1f}), torch threads default. "
        f"Command: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_positional.py`.\n\n"
    )
    replace_section(DOC, "positional", "geoprobe positional (SmolLM2-135M, defaults)", body)
    print(body)
    print(np.round([h["beta"]["value"] for h in d["heads"] if h["beta"]], 2).tolist())


if __name__ == "__main__":
    main()
