"""The floor of the one-layer softmax denoiser with isotropic weights (W_PV = αI, W_KQ = βI) against the oracle, as a
function of the context length L: the energy-landscape minimum over (α, β) on 400 fresh prompts per L (seed 5).
docs/denoise.md quotes its output (the reason the 1.05× target needs L > 500 on the linear and mixture tasks).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/denoise_floor.py      # ≈ 1 min
"""

from __future__ import annotations

import numpy as np
import torch

from geoprobe.denoise.bayes import finite_context, oracle, per_prompt_mse
from geoprobe.denoise.landscape import landscape
from geoprobe.denoise.tasks import make_task, sample


def main() -> None:
    print("| task | L | oracle MSE | finite-context / oracle | isotropic softmax floor / oracle | α* | β* |")
    print("|---|---|---|---|---|---|---|")
    for name in ("linear", "mixture"):
        for L in (500, 2000, 8000):
            t = make_task(name).with_length(L)
            p = sample(t, 400, np.random.default_rng(5))
            ob = per_prompt_mse(oracle(t, p), p.clean).mean()
            fc = per_prompt_mse(finite_context(t, p), p.clean).mean()
            ls = landscape(
                torch.tensor(p.context),
                torch.tensor(p.noisy),
                torch.tensor(p.clean),
                np.geomspace(0.1, 30, 12),
                np.geomspace(0.01, 30, 16),
            )
            print(
                f"| {name} | {L} | {ob:.4f} | {fc / ob:.3f} | {ls.mse_star / ob:.3f} | {ls.alpha_star:.3g} | "
                f"{ls.beta_star:.3g} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
