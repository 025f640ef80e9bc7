"""Peak memory of ``geoprobe trajectory``'s training, measured, beside geoprobe.trajectory.memory's estimate.

Run from the repository root, one configuration at a time (each in a fresh process)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/trajectory_memory.py             # the grid below, ~8 min on 2 CPUs
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/trajectory_memory.py --only default

A worker trains ``train_trajectory(config, out=<temporary directory>, threads=2)`` in a fresh Python
process (data preparation, the BPE, every checkpoint and resume state included) and reports the
process's peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``: what the out-of-memory killer sees,
allocator slack included), its peak when the data were prepared and the model and optimiser built, and
:func:`geoprobe.trajectory.memory.peak_bytes`. CPU only. Prints a reStructuredText table (the one in
``peak_bytes``'s docstring) and, with ``--json``, the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: name -> (TrajectoryConfig settings, what it exercises); steps kept few (each under about two minutes), but
#: at least 4: the resident memory climbs for the first 3 steps, then holds
GRID: dict[str, tuple[dict, str]] = {
    "tiny": (
        dict(steps=8, layers=2, hidden_size=32, heads=2, vocab_size=300, domains=("math",), seq_len=16, batch_size=2),
        "geoprobe trajectory --tiny: the smallest corpus",
    ),
    "default": (dict(steps=20), "the default (Pythia-14M shape), all six domains"),
    "deep": (
        dict(steps=4, layers=12, hidden_size=512, heads=8, seq_len=256, batch_size=8),
        "activations: 12 layers × 2,048 tokens a step",
    ),
    "wide": (dict(steps=4, layers=2, hidden_size=2048, heads=16, seq_len=64, batch_size=4), "parameters: 117 M"),
    "long": (
        dict(steps=4, layers=4, hidden_size=256, heads=8, seq_len=2048, batch_size=4),
        "attention: 2,048-token sequences (no T×T scores under SDPA)",
    ),
    "vocab": (dict(steps=4, vocab_size=32768, seq_len=256, batch_size=16), "logits: 4,096 tokens × 32,768 entries"),
}


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def worker(name: str) -> dict:
    from geoprobe.trajectory import TrajectoryConfig, train_trajectory
    from geoprobe.trajectory.memory import eager_attention, peak_bytes

    warnings.simplefilter("ignore")
    settings = GRID[name][0]
    config = TrajectoryConfig(**settings)
    phases: dict[str, int] = {}

    def maxrss() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux

    phases["imported"] = maxrss()

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "preparing data" and done == total:
            phases["prepared"] = maxrss()

    with tempfile.TemporaryDirectory() as tmp:
        result = train_trajectory(config, out=Path(tmp) / "run", threads=2, progress=progress)
    return {
        "name": name,
        "settings": settings,
        "n_params": result.model.n_params,
        "vocab": result.model.vocab_size,
        "eager": eager_attention(),
        "imported": phases["imported"],
        "prepared": phases.get("prepared"),
        "measured": maxrss(),
        "estimated": peak_bytes(config),
        "train_s": result.train_s,
    }


SHORT = {"layers": "L", "hidden_size": "d", "heads": "H", "seq_len": "T", "batch_size": "B", "vocab_size": "V"}


def _settings(settings: dict) -> str:
    """``L 12, d 512, H 8, T 256, B 8; 4 steps`` (defaults left out; a domain list named)."""
    sizes = ", ".join(f"{SHORT[k]} {v}" for k, v in settings.items() if k in SHORT) or "defaults"
    domains = f", {'+'.join(settings['domains'])} only" if "domains" in settings else ""
    return f"{sizes}{domains}; {settings['steps']} steps"


def table(rows: list[dict]) -> str:
    head = ("config", "settings", "params", "measured", "estimated", "ratio")
    body = [
        (
            r["name"],
            _settings(r["settings"]),
            f"{r['n_params'] / 1e6:.1f} M" if r["n_params"] >= 1e6 else f"{r['n_params'] / 1e3:.0f} k",
            _mib(r["measured"]),
            _mib(r["estimated"]),
            f"{r['estimated'] / r['measured']:.2f}",
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    rule = " ".join("=" * w for w in widths)
    fmt = " ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(line.rstrip() for line in [rule, fmt.format(*head), rule, *(fmt.format(*b) for b in body), rule])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker")
    ap.add_argument("--only", default=",".join(GRID), help=f"comma-separated configs of {', '.join(GRID)}")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return 0
    rows = []
    for name in args.only.split(","):
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        env.pop("GEOPROBE_MEMORY_AVAILABLE", None)
        done = subprocess.run(
            [sys.executable, __file__, "--worker", name], cwd=ROOT, env=env, capture_output=True, text=True
        )
        if done.returncode:
            print(done.stderr[-2000:], file=sys.stderr)
            return done.returncode
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{name}: measured {_mib(row['measured'])} (imported {_mib(row['imported'])}, data and model "
            f"{_mib(row['prepared'] or 0)}), estimated {_mib(row['estimated'])}, {row['train_s']:.0f} s training",
            flush=True,
        )
    print(table(rows))
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
