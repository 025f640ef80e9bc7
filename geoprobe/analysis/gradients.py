"""The gradient of one attention head, written as the gradient-dynamics paper reads it (arXiv 2512.22473).

One head: scores ``s`` (queries × keys), attention ``α = softmax_j(s)`` per query, values ``v``
(keys × d_v), outputs ``o_i = Σ_j α_ij v_j``, and any loss ``L(o)`` with upstream gradient
``u_i = ∂L/∂o_i``. Write ``b_ij = u_i · v_j`` (how much the loss grows along value ``j`` for query
``i``). Then, exactly (the softmax's Jacobian and the chain rule):

* **advantage-based routing**: ``∂L/∂s_ij = α_ij (b_ij − E_{α_i}[b])``, where
  ``E_{α_i}[b] = Σ_k α_ik b_ik``: a score moves by how much better or worse its value is than the
  query's attention-weighted average (gradient descent lowers ``s_ij`` where ``b_ij`` is above it);
* **responsibility-weighted value update**: ``∂L/∂v_j = Σ_i α_ij u_i``, so a gradient step of size
  ``η`` moves ``v_j`` by ``Δv_j = −η Σ_i α_ij u_i``: each query's error, weighted by the
  responsibility ``α_ij`` it assigns to ``j`` (the E-step/M-step reading of the paper).

Both are checked against autograd in float64 on planted inputs of several shapes
(``tests/analysis/test_gradients.py``). Arrays in, arrays out; batched over leading axes.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float


def softmax(scores: Float[np.ndarray, "*b q k"]) -> Float[np.ndarray, "*b q k"]:
    """Row softmax over the keys (the last axis), in float64 (``scipy.special.softmax``: stable for large scores)."""
    import scipy.special

    return scipy.special.softmax(np.asarray(scores, dtype=np.float64), axis=-1)


def advantages(
    alpha: Float[np.ndarray, "*b q k"], u: Float[np.ndarray, "*b q dv"], v: Float[np.ndarray, "*b k dv"]
) -> Float[np.ndarray, "*b q k"]:
    """``b_ij − E_{α_i}[b]`` with ``b_ij = u_i · v_j``: each value's advantage for each query."""
    b = np.asarray(u, dtype=np.float64) @ np.swapaxes(np.asarray(v, dtype=np.float64), -1, -2)
    return b - (np.asarray(alpha, dtype=np.float64) * b).sum(axis=-1, keepdims=True)


def routing_gradient(
    alpha: Float[np.ndarray, "*b q k"], u: Float[np.ndarray, "*b q dv"], v: Float[np.ndarray, "*b k dv"]
) -> Float[np.ndarray, "*b q k"]:
    """``∂L/∂s_ij = α_ij (b_ij − E_{α_i}[b])`` (advantage-based routing)."""
    return np.asarray(alpha, dtype=np.float64) * advantages(alpha, u, v)


def value_gradient(alpha: Float[np.ndarray, "*b q k"], u: Float[np.ndarray, "*b q dv"]) -> Float[np.ndarray, "*b k dv"]:
    """``∂L/∂v_j = Σ_i α_ij u_i`` (each query's error weighted by its responsibility for ``j``)."""
    return np.swapaxes(np.asarray(alpha, dtype=np.float64), -1, -2) @ np.asarray(u, dtype=np.float64)


def value_update(
    alpha: Float[np.ndarray, "*b q k"], u: Float[np.ndarray, "*b q dv"], lr: float
) -> Float[np.ndarray, "*b k dv"]:
    """One gradient step on the values: ``Δv_j = −η Σ_i α_ij u_i``."""
    return -lr * value_gradient(alpha, u)
