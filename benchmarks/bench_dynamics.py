"""``geoprobe dynamics``: is the EM-like schedule's step speed-up also a wall-clock speed-up?

The two schedules run the same forward and backward pass and differ only in their learning rates,
so a step should cost the same. This measures it side by side in one process: ``--rounds`` rounds,
each timing ``--steps`` full-batch steps of SGD and of the EM-like update from the same
initialisation (the order alternates between rounds), at the authors' task size (T = 2000
positions, 8 symbols, d_k = 10, d_v = 15). It reports the median per-step time of each, their
ratio, the wall-clock speed-up that follows from a stored ``dynamics.json``'s steps-to-SGD's-final-
loss (``--result``), and the peak RSS of the process.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_dynamics.py [--rounds 7] [--steps 10] \
        [--result runs/dynamics/dynamics.json] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import time
from pathlib import Path

from _doc import replace_section  # benchmarks/ is sys.path[0] when run as a script

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--length", type=int, default=2000)
    ap.add_argument("--result", type=Path, default=None, help="a dynamics.json for the steps-to-threshold")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()

    import torch

    from geoprobe.dynamics.config import DynamicsConfig
    from geoprobe.dynamics.run import ROUTING, init_weights, train
    from geoprobe.dynamics.task import sample, transition_matrix

    cfg = DynamicsConfig(length=args.length)
    P = transition_matrix(cfg.n_symbols, cfg.self_prob)
    x, y = sample(P, cfg.length, cfg.d_x, 0)
    w0 = init_weights(cfg, 0)
    lrs = {
        "sgd": dict.fromkeys(("W_Q", "W_K", "W_V", "W_O"), cfg.lr),
        "em": {**dict.fromkeys(ROUTING, cfg.lr_routing), "W_V": cfg.lr_value},
    }
    train(w0, x, y, lrs["sgd"], 2)  # warm-up
    per_step: dict[str, list[float]] = {"sgd": [], "em": []}
    for r in range(args.rounds):
        for name in ("sgd", "em") if r % 2 == 0 else ("em", "sgd"):
            t0 = time.perf_counter()
            train(w0, x, y, lrs[name], args.steps)
            per_step[name].append((time.perf_counter() - t0) / args.steps)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    med = {k: statistics.median(v) for k, v in per_step.items()}
    ratios = sorted(e / s for e, s in zip(per_step["em"], per_step["sgd"]))
    ratio = statistics.median(ratios)

    rows = [
        "| schedule | median s / step | per-round s / step |",
        "|---|---:|---|",
        *(f"| {k} | {med[k]:.4f} | {', '.join(f'{t:.4f}' for t in per_step[k])} |" for k in ("sgd", "em")),
    ]
    lines = [
        "\n".join(rows),
        "",
        f"EM-like / SGD time per step: **{ratio:.3f}** (median of {args.rounds} paired rounds; "
        f"range {ratios[0]:.3f}–{ratios[-1]:.3f}). Peak RSS {peak:.0f} MiB.",
    ]
    if args.result is not None:
        from geoprobe.recipes import load_result

        res = load_result(args.result)
        steps = res.em_steps_to_sgd()
        wall_sgd = res.config.steps * med["sgd"]
        wall_em = steps.value * med["sgd"] * ratio  # the paired ratio, not the two medians' quotient
        lines.append(
            f"\nFrom `{args.result.name}` ({len(res.runs)} seeds × {res.config.steps} steps): the EM-like schedule "
            f"reaches SGD's final loss in {steps:.0f} steps, so **{wall_em:.0f} s** of training against SGD's "
            f"{wall_sgd:.0f} s for its {res.config.steps} steps: wall-clock speed-up "
            f"**{wall_sgd / wall_em:.2f}×** (step speed-up {res.config.steps / steps.value:.2f}× ÷ the per-step "
            f"ratio above)."
        )
    lines.append(
        f"\nMachine: {platform.machine()}, {os.cpu_count()} CPUs (load average {os.getloadavg()[0]:.1f} when done), "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, T = {cfg.length}. Command: "
        f"`HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_dynamics.py --rounds {args.rounds} "
        f"--steps {args.steps}" + (f" --result {args.result}" if args.result else "") + "`.\n\n"
    )
    body = "\n".join(lines)
    if not args.no_write:
        replace_section(DOC, "dynamics", "geoprobe dynamics: time per step, SGD vs EM-like (issue 20)", body)
    print(body)


if __name__ == "__main__":
    main()
