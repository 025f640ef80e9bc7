"""On paper: the full Pythia suite (8 sizes × 154 checkpoints = 1,232 scans) as one sweep (issue 30).

Time per cell = load + capture + analyses + writing: the analyses measured on this machine, the capture's
rate and per-layer latency measured on an H200 (benchmarks/gpu/bench_gpu.py, 2026-11-28; docs/benchmarks.md
"GPU"), the weights' read rate assumed. Printed as the table docs/scale.md carries:

    python benchmarks/scale_estimate.py
"""

from __future__ import annotations

import math

#: Pythia: (name, parameters, layers, d_model) — the released configs (EleutherAI/pythia, Biderman et al. 2023)
PYTHIA = (
    ("70m", 70_426_624, 6, 512),
    ("160m", 162_322_944, 12, 768),
    ("410m", 405_334_016, 24, 1024),
    ("1b", 1_011_781_632, 16, 2048),
    ("1.4b", 1_414_647_808, 24, 2048),
    ("2.8b", 2_775_208_960, 32, 2560),
    ("6.9b", 6_857_302_016, 32, 4096),
    ("12b", 11_846_072_320, 36, 5120),
)
CHECKPOINTS = 154  # steps 0, 1, 2, 4, …, 512, then every 1,000 to 143,000
TOKENS = 75 * 38.6  # the default mixed prompt set: 75 prompts, mean 38.6 tokens (docs/benchmarks.md, bench_scan)

# measured here (docs/benchmarks.md): analysers of a full-size Pythia-410M twin, 1.67 s on 2 CPU cores
# (24 layers, d_model 1024); their cost grows with layers × value width (the nulls and bootstraps)
ANALYSE_410M_S, ANALYSE_410M_LD = 1.67, 24 * 1024
WRITE_S = 0.5  # results.json, report.html (4.9 MB with plotly inline), capture/ of the final layer's arrays

# one GPU node, measured on an H200 (benchmarks/gpu/results/2026-11-28-h200-run3.json, mistral-7b twin, bf16):
# capture sustains 500 TFLOP/s at 16 prompts × 2,048 tokens (0.971 s for 4.9e14 FLOP; the matmul peak measured
# there is 800); small batches are latency-bound: capture costs 2.0 ms per layer and batch at 16 × 64 tokens
# (64 ms for 32 layers; the bare forward 0.93 ms per layer)
GPU_FLOPS = 500e12
LOAD_BPS = 2e9  # fp16 checkpoint read from a local NVMe cache, bytes/s (the Hub itself: ~0.1–0.5 GB/s)
BYTES_PER_PARAM = 2  # Pythia checkpoints are stored in fp16
LAYER_LATENCY_S = 2.0e-3  # per layer and batch: capture with geoprobe's attention function, small batches (measured)
BATCHES = math.ceil(75 / 16)  # the default batch size 16
HUB_BPS = 0.3e9  # a typical sustained download from the Hugging Face Hub, bytes/s (assumption)
# LOAD_BPS and HUB_BPS stay assumptions: the GPU machine lent had no network and no checkpoints to read


def cell_seconds(params: int, layers: int, d_model: int) -> dict[str, float]:
    load = params * BYTES_PER_PARAM / LOAD_BPS
    capture = max(2 * params * TOKENS / GPU_FLOPS, BATCHES * layers * LAYER_LATENCY_S)  # compute or latency
    analyse = ANALYSE_410M_S * (layers * d_model) / ANALYSE_410M_LD
    return {"load": load, "capture": capture, "analyse": analyse, "write": WRITE_S}


def main() -> None:
    print("| size | load s | capture s | analyses s | cell s | 154 checkpoints, GPU-hours |")
    print("|---|---|---|---|---|---|")
    total = 0.0
    longest = 0.0
    for name, params, layers, d in PYTHIA:
        c = cell_seconds(params, layers, d)
        cell = sum(c.values())
        longest = max(longest, cell)
        total += CHECKPOINTS * cell
        print(
            f"| {name} | {c['load']:.1f} | {c['capture']:.2f} | {c['analyse']:.1f} | {cell:.1f} | "
            f"{CHECKPOINTS * cell / 3600:.2f} |"
        )
    print(f"| all 1,232 cells | | | | | **{total / 3600:.1f}** |")
    nbytes = CHECKPOINTS * sum(p for _, p, _, _ in PYTHIA) * BYTES_PER_PARAM
    print(
        f"- weights read: {nbytes / 1e12:.1f} TB in all; fetched from the Hub at {HUB_BPS / 1e9:.1f} GB/s that alone "
        f"is {nbytes / HUB_BPS / 3600:.1f} h of download (once, into a shared cache the cells then read)"
    )
    for gpus in (8, 64):
        wall = max(total / gpus, longest)
        print(f"- {gpus} GPUs (one cell per GPU, Ray placing them): about {math.ceil(wall / 60)} min wall-clock")


if __name__ == "__main__":
    main()
