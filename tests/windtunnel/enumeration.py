"""Independent references for the wind-tunnel tests: the HMM filtering posterior by enumerating
every hidden-state path (no forward recursion)."""

from __future__ import annotations

import itertools

import numpy as np


def hmm_path_posterior(T: np.ndarray, E: np.ndarray, obs: np.ndarray) -> np.ndarray:
    """P(s_t | o_1..o_t) for every t, uniform initial state, by summing over every state path."""
    S, K = T.shape[0], len(obs)
    out = np.zeros((K, S))
    for t in range(K):
        for path in itertools.product(range(S), repeat=t + 1):
            w = 1.0 / S * E[path[0], obs[0]]
            for u in range(1, t + 1):
                w *= T[path[u - 1], path[u]] * E[path[u], obs[u]]
            out[t, path[-1]] += w
        out[t] /= out[t].sum()
    return out
