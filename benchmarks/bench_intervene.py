"""Resumed intervention sweep vs naive full re-runs, side by side in one run (SmolLM2-135M).

32 prompts, n = 8 cut strengths along the entropy axis of layer 20 (of 30). Naive: one
unperturbed forward, then one full forward per strength. Resumed: one unperturbed forward
that keeps the residual stream entering block 20, then blocks 20..29 + final norm + head per
strength. Expected cost ratio (naive / resumed, in forward passes):
(1 + n) / (1 + n·(L − ℓ)/L). Prints a markdown table; writes nothing.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_intervene.py
"""

from __future__ import annotations

import time

import numpy as np
import torch

from geoprobe.intervene import Edit, fit_entropy_axis, intervened, sweep
from geoprobe.intervene.forward import final_logprobs
from geoprobe.intervene.metrics import entropy_bits_of
from geoprobe.models import load_model
from geoprobe.prompts import builtin_prompts

N_PROMPTS, N_STRENGTHS, LAYER, REPEATS = 32, 8, 20, 3


def _prompts() -> list[str]:
    return builtin_prompts()[:N_PROMPTS]


def main() -> None:
    model = load_model("smollm2-135m")
    prompts = _prompts()
    assert len(prompts) == N_PROMPTS, len(prompts)
    L = model.layout.n_layers
    lp, values = final_logprobs(model, prompts, value_layers=[LAYER])
    axis = fit_entropy_axis(values[LAYER], entropy_bits_of(lp), layer=LAYER)
    edit_sets = [{LAYER: Edit(axis, "cut", float(s))} for s in np.linspace(0.125, 1.0, N_STRENGTHS)]

    def naive():
        base, _ = final_logprobs(model, prompts)
        out = []
        for e in edit_sets:
            with intervened(model, e):
                out.append(final_logprobs(model, prompts)[0])
        return base, out

    def resumed():
        r = sweep(model, prompts, edit_sets)
        assert r.resumed
        return r.base, r.logprobs

    naive(), resumed()  # warm-up
    t_naive, t_res = [], []
    for _ in range(REPEATS):  # interleaved, so both see the same machine load
        t0 = time.perf_counter()
        nb, nout = naive()
        t_naive.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        rb, rout = resumed()
        t_res.append(time.perf_counter() - t0)
    err = max(float((a - b).abs().max()) for a, b in zip(nout, rout))
    tn, tr = float(np.median(t_naive)), float(np.median(t_res))
    expected_resumed = 1 + N_STRENGTHS * (L - LAYER) / L
    print(
        f"SmolLM2-135M, {N_PROMPTS} prompts, {N_STRENGTHS} cut strengths at layer {LAYER} of {L}; "
        f"median of {REPEATS} interleaved runs, torch threads {torch.get_num_threads()}; "
        f"max |resumed − naive| log-prob {err:.1e}\n"
    )
    print("| sweep | time (s) | forward-pass cost (expected) | speed-up measured | speed-up expected |")
    print("|---|---|---|---|---|")
    print(f"| naive: 1 + n full forwards | {tn:.2f} | {1 + N_STRENGTHS:.2f} | 1.00 | 1.00 |")
    print(
        f"| resumed at layer {LAYER} | {tr:.2f} | 1 + n·(L−ℓ)/L = {expected_resumed:.2f} | {tn / tr:.2f} | "
        f"{(1 + N_STRENGTHS) / expected_resumed:.2f} |"
    )


if __name__ == "__main__":
    main()
