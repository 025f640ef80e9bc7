"""What the load-time checks of issue 28 cost, side by side with the rest of loading a model.

For each model, in one process: the time to load it (weights into a Hugging Face model), then the
time of each step of ``geoprobe.models.loaded.boot`` measured separately on the same loaded model,
``--repeats`` times (median): ``inspect_model`` (the derived layout, which was all of boot before),
the reference forward pass the three checks share (``verify.own_logits``) and the three checks of
``geoprobe/models/verify.py`` (causal, position numbering, the same logits with geoprobe's function
installed). Ratio = checks / (load + inspect), the share of a model load that the checks add.

    python benchmarks/bench_boot_checks.py                 # writes its table into docs/benchmarks.md
    python benchmarks/bench_boot_checks.py --no-write
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from datetime import datetime
from pathlib import Path

MODELS = ("smollm2-135m", "gemma-3-270m", "twin:pythia-410m:full")


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(name: str, repeats: int) -> dict:
    from geoprobe.models import load_model
    from geoprobe.models.architecture import inspect_model, probing
    from geoprobe.models.attention import Probe
    from geoprobe.models.verify import check_causal, check_same_model, own_logits, position_offset

    t0 = time.perf_counter()
    m = load_model(name)
    load = time.perf_counter() - t0
    hf = m.hf_model
    own = own_logits(hf)
    row = {
        "model": name,
        "load": load,
        "inspect": timed(lambda: inspect_model(hf), repeats),
        "own": timed(lambda: own_logits(hf), repeats),
        "causal": timed(lambda: check_causal(hf, name, own), repeats),
        "positions": timed(lambda: position_offset(hf, own), repeats),
        "same": timed(lambda: check_same_model(hf, name, lambda: probing(hf, m.arch, Probe.silent()), own), repeats),
    }
    row["checks"] = row["own"] + row["causal"] + row["positions"] + row["same"]
    row["ratio"] = row["checks"] / (row["load"] + row["inspect"])
    return row


def main() -> None:
    import torch
    import transformers

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    rows = [measure(name, args.repeats) for name in args.models.split(",")]
    lines = [
        f"Command: `python benchmarks/bench_boot_checks.py --models {args.models} --repeats {args.repeats}`",
        "",
        f"Run {datetime.now().isoformat(timespec='seconds')} on {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}; "
        f"torch threads {torch.get_num_threads()}, cpu, float32. Each step: median of {args.repeats}.",
        "",
        "| model | load s | inspect s | reference s | causal s | positions s | same logits s | "
        "checks / (load + inspect) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['load']:.2f} | {r['inspect']:.3f} | {r['own']:.3f} | {r['causal']:.3f} | "
            f"{r['positions']:.3f} | "
            f"{r['same']:.3f} | {r['ratio']:.3f} |"
        )
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_write:
        from _doc import replace_section

        replace_section(
            Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md",
            "bench_boot_checks",
            "Load-time checks (`benchmarks/bench_boot_checks.py`, issue 28)",
            body,
        )


if __name__ == "__main__":
    main()
