"""Synthetic checkpoint series with planted structure, as :class:`geoprobe.sweep.checkpoints.CheckpointArrays`
(the tests of the paired contrasts and emergence use them without a sweep).

Every checkpoint shares the n prompts (one latent factor f per prompt, fixed across the series) and draws its
own small noise. What moves with the step is planted: ``entropy(step)`` shifts the attention entropy of every
layer by that many bits; ``flips(step)`` is the number of coordinates whose sign is flipped in the value
manifold's three planted directions (rows of a Hadamard matrix, ±1/√D each, so every column has the same
variance and standardisation is a uniform scaling: the planted axes are the population PCs exactly, and
flipping m signs turns PC1 by arccos(1 − 2m/D)); ``routing(step)`` in [0, 1] mixes each head's attention
logits between a random pattern (0) and the final pattern (1)."""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.linalg

from geoprobe.sweep.checkpoints import CheckpointArrays

STEPS = (0, 1, 2, 4, 8, 16, 32, 64)
D = 64
STRENGTHS = (20.0, 14.0, 10.0)


def flipped(m: int) -> np.ndarray:
    """The sign flip of the first m coordinates, as a diagonal (D,)."""
    s = np.ones(D)
    s[:m] = -1.0
    return s


def directions() -> np.ndarray:
    """The three planted value directions (3, D), orthonormal."""
    return scipy.linalg.hadamard(D)[1:4] / np.sqrt(D)


def series(
    *,
    steps: tuple[int, ...] = STEPS,
    n: int = 200,
    layers: int = 2,
    heads: int = 4,
    tokens: int = 10,
    entropy: Callable[[int], float] = lambda s: 0.0,
    flips: Callable[[int], int] = lambda s: 0,
    routing: Callable[[int], float] = lambda s: 1.0,
    run: str | None = None,
    seed: int = 0,
    prompt_hash: str = "p" * 64,
) -> list[CheckpointArrays]:
    """One run's checkpoints (module docs); ``seed`` draws the run's own noise (the prompts' factor, the final
    attention pattern and the head entropies' prompt effects are seed 12345's: shared by every run)."""
    shared = np.random.default_rng(12345)
    f = shared.standard_normal((n, 3))
    entropy0 = shared.normal(3.0, 0.3, size=(n, heads))
    final_logits = shared.normal(0.0, 2.0, size=(n, heads, tokens))
    start_logits = shared.normal(0.0, 2.0, size=(n, heads, tokens))
    next_entropy = f[:, 0] + shared.normal(0.0, 1.0, n)
    key = shared.uniform(0.08, 0.12, size=(layers, heads))
    rng = np.random.default_rng(seed)
    out = []
    for step in steps:
        u = directions() * flipped(flips(step))
        values = tuple((f * STRENGTHS) @ u + rng.standard_normal((n, D)) for _ in range(layers))
        aligned = np.stack([f[:, 0] + rng.normal(0.0, 0.5, n) for _ in range(layers)])
        head_entropy = np.stack([entropy0 + entropy(step) + rng.normal(0.0, 0.05, (n, heads)) for _ in range(layers)])
        mix = routing(step)
        logits = mix * final_logits + (1 - mix) * start_logits + rng.normal(0.0, 0.05, final_logits.shape)
        p = np.exp(logits - logits.max(axis=-1, keepdims=True))
        patterns = tuple(p / p.sum(axis=-1, keepdims=True) for _ in range(layers))
        out.append(
            CheckpointArrays(
                cell=f"{run or 'run'}-step{step}",
                step=step,
                run=run,
                layers=tuple(range(layers)),
                values=values,
                aligned=aligned,
                next_entropy=next_entropy,
                per_prompt=head_entropy.mean(axis=2),
                head_entropy=head_entropy,
                per_head=key + rng.normal(0.0, 1e-4, key.shape),
                patterns=patterns,
                prompt_hash=prompt_hash,
            )
        )
    return out
