"""Where SULA's label mass falls, and the baseline behind the default threshold (docs/sula.md, "Label mass").

From a sula.json written with the default settings (``geoprobe sula --model smollm2-135m --out RUN``):
the label mass P(L1) + P(L2) per condition and per k, and its histogram over every prompt. With
``--baseline``, the copying baseline too: on the main, lexical-remap and shuffled prompts with k ≥ 1,
the next-token mass at the query of the two most recent distinct carrier words of the prompt (in
the context, but never an answer after the query), from one more pass of the model over those
prompts (about 8 minutes for SmolLM2-135M on 2 busy CPU cores).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/sula_label_mass.py runs/smollm2-135m-sula --baseline
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np


def describe(result) -> None:
    print("| condition | mean | median by k |")
    print("|---|---|---|")
    for name, c in result.conditions.items():
        per_k = ", ".join(f"{k}: {np.median(c.label_mass[c.k == k]):.2g}" for k in np.unique(c.k))
        print(f"| {name} | {c.label_mass.mean():.2g} | {per_k} |")
    mass = np.concatenate([c.label_mass for c in result.conditions.values()])
    counts, edges = np.histogram(np.log10(mass), bins=np.arange(-8.0, 0.5, 0.5))
    print(f"\nlog10 label mass, {mass.size} prompts:")
    for lo, n in zip(edges[:-1], counts):
        if n:
            print(f"  [{lo:+.1f}, {lo + 0.5:+.1f}): {n}")


def copying_baseline(model_name: str, config) -> np.ndarray:
    """Per prompt (k ≥ 1; main, lexical_remap, shuffled): the next-token mass at the query of the
    first tokens of the two most recent distinct carrier words (one word at k = 1)."""
    import torch

    from geoprobe import load_model
    from geoprobe.capture.run import final_position_logits, tokenize
    from geoprobe.sula import generate

    model = load_model(model_name)
    tok = model.tokenizer
    out = []
    for cond in ("main", "lexical_remap", "shuffled"):
        prompts = [p for p in generate(replace(config, condition=cond)) if p.k >= 1]
        ids, _ = tokenize(model, [p.text for p in prompts], None)
        mass = np.zeros(len(prompts))
        for rows, logits in final_position_logits(model, ids, config.batch_size):
            p_next = torch.softmax(logits.double(), dim=-1).numpy()
            for j, r in enumerate(rows):
                words = [ex.split(":")[0] for ex in prompts[r].text.split(config.separator)[:-1]][::-1]
                recent = list(dict.fromkeys(words))[:2]
                word_ids = [tok(" " + w, add_special_tokens=False)["input_ids"][0] for w in recent]
                mass[r] = p_next[j, word_ids].sum()
        out.append(mass)
    return np.concatenate(out)


def main() -> None:
    from geoprobe.sula import SulaResult

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path, help="a sula.json or the run directory holding it")
    ap.add_argument("--baseline", action="store_true", help="also measure the copying baseline (a model pass)")
    args = ap.parse_args()
    result = SulaResult.load(args.run)
    describe(result)
    if args.baseline:
        base = copying_baseline(result.provenance["model_id"], result.config)
        q = np.quantile(base, [0.5, 0.9, 0.95, 0.99])
        print(
            f"\ncopying baseline, {base.size} prompts: median {q[0]:.2g}, 90th percentile {q[1]:.2g}, "
            f"95th {q[2]:.2g}, 99th {q[3]:.2g}; share at or above 0.01: {np.mean(base >= 0.01):.3f}"
        )


if __name__ == "__main__":
    main()
