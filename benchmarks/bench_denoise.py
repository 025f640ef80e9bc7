"""In-context denoising (arXiv 2502.05164): train one-layer softmax and linear attention on every task at the
default settings (``geoprobe denoise`` defaults: L = 500, n = 16, 2000 Adam steps of 64 fresh prompts, lr 0.01
decayed ×0.1 at 80 % and 90 %), score them on 2000 held-out prompts against the oracle (Bayes) MSE and the
finite-context estimator, and write the table into docs/benchmarks.md (section ``denoise``).

The issue's target: trained softmax attention within 1.05× of the oracle MSE on every task, on CPU in minutes.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_denoise.py            # ≈ 4-6 min on 2 busy cores
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_denoise.py --steps 200 --no-doc   # a quick look
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

from _doc import replace_section  # benchmarks/ is sys.path[0] when run as a script

from geoprobe.denoise.config import DenoiseConfig
from geoprobe.denoise.result import TARGET_RATIO
from geoprobe.denoise.run import run_denoise

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="linear,sphere,mixture")
    ap.add_argument("--steps", type=int, default=None, help="default: geoprobe denoise's")
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--long",
        default="2000:3000:256",
        help="L:steps:batch of the second configuration (the paper's L = 500 is always run with the "
        "defaults; the isotropic softmax floor falls with L, see docs/denoise.md); 'none' to skip",
    )
    ap.add_argument("--no-doc", action="store_true", help="print the table only")
    args = ap.parse_args()
    rows = []
    base = {k: v for k, v in dict(steps=args.steps, lr=args.lr, batch_size=args.batch_size).items() if v is not None}
    configs = [(500, base)]
    if args.long != "none":
        L_long, steps_long, batch_long = (int(x) for x in args.long.split(":"))
        configs.append((L_long, {**base, "steps": steps_long, "batch_size": batch_long}))
    for task, L, over in [(t, L, over) for L, over in configs for t in args.tasks.split(",")]:
        cfg = DenoiseConfig(
            task=task, context_length=L, lengths=(), transfer_dims=(), energy=False, seed=args.seed, **over
        )
        t0 = time.perf_counter()
        res = run_denoise(cfg)
        total = time.perf_counter() - t0
        bayes = res.score("oracle").mse.value
        fin = res.score("finite-context").mse
        for model in ("softmax", "linear"):
            s = res.score(model)
            r = s.ratio
            rows.append(
                {
                    "task": task,
                    "L": str(L),
                    "model": f"{model} attention",
                    "MSE [95% CI]": f"{s.mse.value:.4g} [{s.mse.low:.4g}, {s.mse.high:.4g}]",
                    "Bayes MSE": f"{bayes:.4g}",
                    "ratio [95% CI]": f"{r.value:.3f} [{r.low:.3f}, {r.high:.3f}]",
                    "finite-context MSE": f"{fin.value:.4g} (×{res.score('finite-context').ratio.value:.3f})",
                    "steps × batch": f"{cfg.steps} × {cfg.batch_size}",
                    "train s": f"{res.training[model]['seconds']:.0f}",
                    f"≤ {TARGET_RATIO}×": ("pass" if r.value <= TARGET_RATIO else "FAIL")
                    + ("" if model == "softmax" else " (not required)"),
                }
            )
        print(f"{task} L={L}: {total:.0f} s", flush=True)
        for r in rows[-2:]:
            print("  ", r, flush=True)
    head = list(rows[0])
    table = "| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n"
    table += "".join("| " + " | ".join(r.values()) + " |\n" for r in rows)
    body = (
        f"`HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_denoise.py` on "
        f"{platform.processor() or platform.machine()}"
        f" (2 shared cores; training uses 1 torch thread), seed {args.seed}. n = 16; lr 0.01 (×0.1 at 80 % and "
        "90 %), fresh prompts every step; 2000 evaluation prompts; MSE per coordinate with 95 % BCa bootstrap CIs; "
        "ratio = model MSE / oracle MSE on the same prompts (paired bootstrap). Target (the issue's): softmax "
        "attention ≤ 1.05× the oracle on every task. At the paper's L = 500 (geoprobe denoise's defaults) it "
        "cannot be met on the linear and mixture tasks by any one-layer softmax attention with isotropic weights: "
        "the energy-landscape minimum of that family is 1.12× (linear) and 1.09× (mixture) the oracle there, and "
        "falls towards 1 as L grows (1.015 and 1.03 at L = 2000); the second block is that longer-context "
        "configuration, trained longer with larger batches (docs/denoise.md)."
        "\n\n" + table + "\n"
    )
    print(table)
    if not args.no_doc:
        replace_section(DOC, "denoise", "In-context denoising: trained attention vs the Bayes-optimal denoiser", body)
        print(f"wrote section 'denoise' of {DOC}")


if __name__ == "__main__":
    main()
