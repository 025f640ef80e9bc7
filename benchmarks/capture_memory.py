"""Peak memory of one capture batch, measured, beside geoprobe.capture.memory's estimate (issue 17).

Run from the repository root::

    python benchmarks/capture_memory.py                     # the default grid (twins and SmolLM2)
    python benchmarks/capture_memory.py --models twin:pythia-410m --batches 1,4 --tokens 256,1024

Every (model, batch, tokens) point runs in its own subprocess. A worker loads the model, runs one
small warm-up capture (so one-time allocations are not counted), records its RSS, resets the
kernel's peak-RSS counter (``/proc/self/clear_refs``), captures ``batch`` prompts cut to exactly
``tokens`` tokens in one batch (``CaptureConfig(batch_size=batch, max_tokens=tokens)``, the
default sites: values, keys, attention entropy), and reports the peak RSS above the loaded RSS
(Linux ``VmHWM``). That is what the out-of-memory killer sees, allocator slack included. CPU only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRID = {
    "twin:llama-3.2-1b": [(1, 512), (1, 1024), (1, 2048), (4, 1024), (4, 2048), (16, 1024), (1, 4096)],
    "twin:mistral-7b": [(1, 2048), (4, 1024)],
    "twin:phi-2": [(1, 2048), (4, 1024)],
    "twin:pythia-410m": [(1, 512), (1, 1024), (1, 2048), (4, 1024), (4, 2048)],
    "twin:gemma-3-270m": [(1, 1024), (4, 1024), (1, 2048)],
    "twin:pythia-410m:full": [(1, 512), (1, 1024), (2, 1024), (4, 256), (16, 128)],
    "smollm2-135m": [(1, 512), (1, 1024), (1, 2048), (4, 1024), (2, 2048), (1, 4096), (8, 512), (16, 256), (16, 128)],
}


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def worker(model_name: str, batch: int, tokens: int) -> dict:
    import gc

    from geoprobe.capture import CaptureConfig, capture
    from geoprobe.capture.memory import forward_peak_bytes
    from geoprobe.models import load_model

    warnings.simplefilter("ignore")
    m = load_model(model_name)
    for p in m.hf_model.parameters():  # make the weights resident before the baseline
        p.data.sum()
    words = " ".join(f"w{i % 997} and" for i in range(tokens * 2))
    capture(m, [words] * 2, CaptureConfig(batch_size=2, max_tokens=16))  # warm-up
    gc.collect()
    loaded = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    cap = capture(m, [words + f" {i}" for i in range(batch)], CaptureConfig(batch_size=batch, max_tokens=tokens))
    assert int(cap.n_tokens.min()) == tokens, cap.n_tokens
    peak = _status("VmHWM") - loaded
    est = forward_peak_bytes(m, batch, tokens)
    return {
        "model": model_name,
        "batch": batch,
        "tokens": tokens,
        "measured": peak,
        "estimated": est,
        "layers": m.layout.n_layers,
        "heads": m.layout.n_heads,
        "d_model": m.layout.d_model,
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=3)
    ap.add_argument("--models", default=",".join(GRID))
    ap.add_argument("--batches")
    ap.add_argument("--tokens")
    ap.add_argument("--out", default="-")
    args = ap.parse_args(argv)
    if args.worker:
        name, b, t = args.worker
        print(json.dumps(worker(name, int(b), int(t))))
        return 0
    rows = []
    for name in args.models.split(","):
        points = GRID.get(name, [])
        if args.batches and args.tokens:
            points = [(int(b), int(t)) for b in args.batches.split(",") for t in args.tokens.split(",")]
        for b, t in points:
            env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
            r = subprocess.run(
                [sys.executable, __file__, "--worker", name, str(b), str(t)], capture_output=True, text=True, env=env
            )
            if r.returncode != 0:
                print(f"{name} B={b} T={t}: failed: {r.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                continue
            row = json.loads(r.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(
                f"{name:24} B={b:3} T={t:5}  measured {row['measured'] / 2**20:9.1f} MiB  "
                f"estimated {row['estimated'] / 2**20:9.1f} MiB  ratio "
                f"{row['estimated'] / max(row['measured'], 1):5.2f}",
                flush=True,
            )
    if args.out != "-":
        Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
