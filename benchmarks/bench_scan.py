"""Scan benchmark: a full `geoprobe scan` of the embedded model, and what the analysers cost.

Targets (issue 3): the whole scan of SmolLM2-135M on the default prompt set, report included,
in under 2 minutes on 2 CPU cores; the analysers add < 10 % to the capture time.

1. End to end: `geoprobe scan --out TMP` in a fresh process (Python start-up, imports, cached
   GGUF load, capture, random-init baseline, analysers, results.json, capture/, report.html),
   timed from outside, `--runs` times.
2. Breakdown, in one process with the model loaded once: capture, the random-init W_K baseline,
   the analysers, and writing the report, each `--runs` times.

    python benchmarks/bench_scan.py            # writes its table into docs/benchmarks.md
    python benchmarks/bench_scan.py --no-write
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path


def end_to_end(model: str, runs: int, command: str = "scan") -> list[float]:
    """Wall time of `geoprobe scan` (or `geoprobe capture`, same prompts and layers) in new processes."""
    times = []
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            extra = ["--prompts", "mixed"] if command == "capture" else []  # capture's default is builtin
            r = subprocess.run(
                [sys.executable, "-m", "geoprobe.cli", command, "--model", model, "--out", f"{d}/run", *extra],
                capture_output=True,
                text=True,
                env=env,
            )
            times.append(time.perf_counter() - t)
            if r.returncode:
                raise SystemExit(f"geoprobe {command} failed:\n{r.stderr[-3000:]}")
    return times


def breakdown(model: str, runs: int) -> dict[str, list[float]]:
    from geoprobe.analysis.initnull import resample_indices
    from geoprobe.capture.run import CaptureConfig, capture
    from geoprobe.models.loading import load_model
    from geoprobe.scan import ScanConfig, analyse
    from geoprobe.scan.nulls import init_null
    from geoprobe.scan.run import resolve_prompts

    config = ScanConfig()
    t = time.perf_counter()
    m = load_model(model)
    load_s = time.perf_counter() - t
    texts, _, _ = resolve_prompts(config, model=m)  # the default set (mixed: sampled with the model's entropies)
    out: dict[str, list[float]] = {
        "load (in this process)": [load_s],
        "capture": [],
        "random-init null (3 draws of the architecture captured on the prompts)": [],
        "analysers": [],
    }
    cc = CaptureConfig(batch_size=config.batch_size)
    for _ in range(runs):
        t = time.perf_counter()
        cap = capture(m, texts, cc, seed=config.seed)
        out["capture"].append(time.perf_counter() - t)
        t = time.perf_counter()
        null, init = init_null(m, texts, config, cap, resample_indices(cap.n_prompts, config.n_resamples, config.seed))
        out["random-init null (3 draws of the architecture captured on the prompts)"].append(time.perf_counter() - t)
        t = time.perf_counter()
        result = analyse(cap, config, init_w_k=init, init_label=null.label, null=null)
        out["analysers"].append(time.perf_counter() - t)
        for key in ("manifold", "alignment", "orthogonality", "focusing", "identifiability"):
            out.setdefault(f"  of which {key}", []).append(result.timings.get(f"{key}_s", float("nan")))
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            result.report(Path(d) / "report.html")
            out.setdefault("report.html", []).append(time.perf_counter() - t)
    out["_n"] = [cap.n_prompts, len(cap.layers), float(cap.n_tokens.mean())]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--doc", default=str(Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    import torch

    e2e, cap_e2e = [], []
    for _ in range(args.runs):  # interleaved, so drift affects both alike
        cap_e2e += end_to_end(args.model, 1, "capture")
        e2e += end_to_end(args.model, 1, "scan")
    parts = breakdown(args.model, args.runs)
    n, layers, mean_tokens = parts.pop("_n")
    med = {k: statistics.median(v) for k, v in parts.items()}
    ratio = med["analysers"] / med["capture"]
    null_s = med["random-init null (3 draws of the architecture captured on the prompts)"]
    ratio_init = null_s / med["capture"]
    lines = [
        f"Command: `python benchmarks/bench_scan.py --runs {args.runs}`",
        "",
        f"Run {datetime.now().isoformat(timespec='seconds')} on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs; Python {platform.python_version()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads. Model {args.model}, default prompt set: {int(n)} prompts "
        f"(mean {mean_tokens:.1f} tokens), {int(layers)} layers; default resamples (probes/scan.toml).",
        "",
        "| stage | median s | runs |",
        "|---|---|---|",
        f"| `geoprobe scan` end to end, new process (report, results, capture/ written) | {statistics.median(e2e):.1f} "
        f"| {', '.join(f'{x:.1f}' for x in e2e)} |",
        f"| `geoprobe capture` end to end, new process (capture/ written), same prompts | "
        f"{statistics.median(cap_e2e):.1f} | {', '.join(f'{x:.1f}' for x in cap_e2e)} |",
    ]
    for k, v in parts.items():
        lines.append(f"| {k} | {med[k]:.2f} | {', '.join(f'{x:.2f}' for x in v)} |")
    ok_total, ok_ratio = statistics.median(e2e) < 120, ratio < 0.10
    lines += [
        "",
        "| target | measured | threshold | result |",
        "|---|---|---|---|",
        f"| full scan, report included | {statistics.median(e2e):.1f} s | < 120 s | "
        f"**{'PASS' if ok_total else 'FAIL'}** |",
        f"| analysers / capture | {ratio:.3f} | < 0.10 | **{'PASS' if ok_ratio else 'FAIL'}** |",
        f"| (context) random-init null / capture (issue 37: three draws, first and last layers) | {ratio_init:.3f} "
        "| — | info |",
        f"| (context) `geoprobe scan` / `geoprobe capture`, new processes, − 1 | "
        f"{statistics.median(e2e) / statistics.median(cap_e2e) - 1:.3f} | — | info |",
        "",
    ]
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_write:
        from _doc import replace_section  # benchmarks/ is sys.path[0] when run as a script

        path = Path(args.doc)
        replace_section(path, "bench_scan", "Scan benchmark (`benchmarks/bench_scan.py`)", body)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
