"""The sticky Markov chain of the gradient-dynamics paper, and its data.

Transitions: P[i, i] = self_prob; off the diagonal, weights 1 / (circular distance) normalised to
1 − self_prob. Data of one seed: a chain of ``length`` symbols from a uniform start; input
x_t = μ_{y_{t−1}} + N(0, I) (symbol means μ drawn once, from a generator seeded 0, the same for
every seed, as the authors fix them), target y_t. The floor of the loss is the chain's conditional
entropy H(Y_t | Y_{t−1}) in nats (the chain is circulant, so every state is equally likely and the
plain mean over rows is the stationary average)."""

from __future__ import annotations

import numpy as np
import torch
from jaxtyping import Float


def transition_matrix(n_symbols: int, self_prob: float) -> Float[np.ndarray, "S S"]:
    """The sticky chain's transition matrix (rows sum to 1)."""
    i = np.arange(n_symbols)
    dist = np.abs(i[:, None] - i[None, :])
    dist = np.minimum(dist, n_symbols - dist).astype(np.float64)
    off = np.where(dist > 0, 1.0 / np.where(dist > 0, dist, 1.0), 0.0)
    P = off / off.sum(axis=1, keepdims=True) * (1.0 - self_prob)
    P[i, i] = self_prob
    return P


def conditional_entropy_nats(P: Float[np.ndarray, "S S"]) -> float:
    """H(Y_t | Y_{t−1}) in nats, averaged uniformly over the previous state."""
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0).sum(axis=1)
    return float(h.mean())


def sample(P: Float[np.ndarray, "S S"], length: int, d_x: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs (length − 1, d_x) float32, targets (length − 1,) int64) of one seed."""
    S = P.shape[0]
    means = torch.randn(S, d_x, generator=torch.Generator().manual_seed(0))
    rng = np.random.default_rng(seed)
    seq = np.empty(length, dtype=np.int64)
    seq[0] = rng.integers(S)
    cum = np.cumsum(P, axis=1)
    u = rng.random(length - 1)
    for t in range(1, length):
        seq[t] = min(int(np.searchsorted(cum[seq[t - 1]], u[t - 1], side="right")), S - 1)
    y = torch.from_numpy(seq)
    noise = torch.randn(length - 1, d_x, generator=torch.Generator().manual_seed(seed))
    return means[y[:-1]] + noise, y[1:]
