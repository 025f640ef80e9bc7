"""The energy view of attention for in-context denoising (arXiv 2502.05164).

A context of L tokens ``X = (x_1 … x_L)`` (rows, each in R^n) defines a Hopfield-like energy on a
state ``s``::

    E(s) = ‖s‖² / (2α) − (1/β) · log Σ_i exp(β x_iᵀ s)
    ∇E(s) = s/α − Σ_i x_i softmax_i(β Xs)

One gradient step of size γ = α started at the noisy query ``s = x̃`` lands exactly on the
softmax attention output with value map ``W_PV = αI`` and key-query map ``W_KQ = βI`` (the query
is not part of the context)::

    x̃ − α ∇E(x̃) = α Σ_i x_i softmax_i(β x_iᵀ x̃)        (``attention_step``)

Iterating with γ = α is the modern-Hopfield retrieval ``s ← α X softmax(β Xs)``. Writing
``E = f − g`` with ``f = ‖s‖²/(2α)`` and ``g = lse(β Xs)/β`` convex, the step minimises the convex
upper bound ``U_t(s) = f(s) − g(s_t) − ∇g(s_t)ᵀ(s − s_t) ≥ E(s)`` (concave-convex procedure), so
``E(s_{t+1}) ≤ U_t(s_{t+1}) ≤ U_t(s_t) = E(s_t)``. ``U_t`` is the isotropic quadratic
``‖s − αp_t‖²/(2α) + const`` (``p_t = X softmax(β X s_t)``) and a step of size γ scales
``s_t − αp_t`` by ``|1 − γ/α|``, so the energy is non-increasing for every ``0 < γ ≤ 2α``
(``descend``; tested numerically for γ ≤ α).

The paper's point: for denoising, the *one* step is what matters. When the clean points are
a mixture of tight clusters with unit-norm centres and the noise is isotropic Gaussian with
variance σ_Z² per coordinate, the Bayes posterior mean is ``Σ_a μ_a softmax_a(μ_aᵀ x̃ / σ_Z²)``
(σ_0 → 0), i.e. one attention step with α = 1, β = 1/σ_Z². Iterating instead moves to a fixed
point near a stored memory (a context token or the centre of its cluster) — retrieval, which is
worse in MSE when the clean point is not itself in the context (and never better than the
posterior mean in expectation).

The landscape and the descent comparison built on these functions are in
:mod:`geoprobe.denoise.landscape`.

Shapes: context ``X`` (B, L, n), queries / states ``s`` (B, n). Torch tensors or numpy arrays; the
array functions keep the input's floating dtype, the two result builders compute in float64.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from jaxtyping import Float

from geoprobe.errors import GeoprobeError


# -- validation -------------------------------------------------------------------------------
def check_positive(name: str, value: Any, fix: str, why: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise GeoprobeError(f"{name} {value!r} is not a number; {fix}") from None
    if not (math.isfinite(v) and v > 0):
        raise GeoprobeError(f"{name} {value!r} is not a positive finite number ({why}); {fix}")
    return v


def check_alpha(a: Any) -> float:
    return check_positive("alpha", a, "pass --alpha greater than 0", "the energy term ‖s‖²/(2α) needs α > 0")


def check_beta(b: Any) -> float:
    return check_positive("beta", b, "pass --beta greater than 0", "the softmax inverse temperature needs β > 0")


def check_gamma(g: Any, alpha: float) -> float:
    if g is None:
        return alpha
    return check_positive(
        "gamma", g, "pass a step size gamma greater than 0 (leave it unset for γ = α)", "a descent step needs γ > 0"
    )


def check_steps(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise GeoprobeError(f"descent steps {n!r} is not an integer; pass --descent-steps 0 or more")
    if n < 0:
        raise GeoprobeError(f"descent steps {n} is negative (the limit is 0); pass --descent-steps 0 or more")
    return int(n)


def _tensor(name: str, x: Any, ndim: int, dims: str) -> torch.Tensor:
    t = torch.as_tensor(x)
    if not t.is_floating_point():
        t = t.to(torch.float64)
    if t.ndim != ndim:
        raise GeoprobeError(f"{name} has shape {tuple(t.shape)}, not {ndim} dimensions {dims}; pass {name} as {dims}")
    if t.numel() == 0:
        raise GeoprobeError(f"{name} has shape {tuple(t.shape)} with an empty dimension; pass a non-empty {dims} array")
    if not bool(torch.isfinite(t).all()):
        raise GeoprobeError(f"{name} contains NaN or Inf; pass finite values")
    return t


def checked_inputs(X: Any, *states: tuple[str, Any], dtype: torch.dtype | None = None) -> list[torch.Tensor]:
    """``[X, s1, s2, …]`` as tensors of one floating dtype after checking (B, L, n) against (B, n)."""
    ts = [_tensor("context X", X, 3, "(batch, length, dim)")]
    ts += [_tensor(name, s, 2, "(batch, dim)") for name, s in states]
    B, _, n = ts[0].shape
    for (name, _), t in zip(states, ts[1:]):
        if tuple(t.shape) != (B, n):
            raise GeoprobeError(
                f"{name} has shape {tuple(t.shape)} but the context X {tuple(ts[0].shape)} needs "
                f"({B}, {n}); pass one {n}-dimensional row per context"
            )
    if dtype is None:
        dtype = ts[0].dtype
        for t in ts[1:]:
            dtype = torch.promote_types(dtype, t.dtype)
    return [t.to(dtype) for t in ts]


# -- the energy and its steps -------------------------------------------------------------------
def attention_logits(s: Float[torch.Tensor, "B n"], X: Float[torch.Tensor, "B L n"]) -> Float[torch.Tensor, "B L"]:
    """``x_iᵀ s`` for every context token (unchecked inputs)."""
    return torch.einsum("bln,bn->bl", X, s)


def readout(
    s: Float[torch.Tensor, "B n"], X: Float[torch.Tensor, "B L n"], beta: float | torch.Tensor
) -> Float[torch.Tensor, "B n"]:
    """``X softmax(β X s)`` per row: (B, n)."""
    return torch.einsum("bl,bln->bn", torch.softmax(beta * attention_logits(s, X), dim=-1), X)


def energy(
    s: Float[torch.Tensor, "B n"], X: Float[torch.Tensor, "B L n"], alpha: float, beta: float
) -> Float[torch.Tensor, " B"]:
    """``E(s) = ‖s‖²/(2α) − (1/β) logsumexp_i(β x_iᵀ s)`` per row."""
    a, b = check_alpha(alpha), check_beta(beta)
    X, s = checked_inputs(X, ("state s", s))
    return energy_unchecked(s, X, a, b)


def energy_unchecked(
    s: Float[torch.Tensor, "B n"], X: Float[torch.Tensor, "B L n"], a: float, b: float
) -> Float[torch.Tensor, " B"]:
    """``energy`` without checking its inputs (they were checked once by the caller)."""
    return (s * s).sum(-1) / (2 * a) - torch.logsumexp(b * attention_logits(s, X), dim=-1) / b


def energy_gradient(
    s: Float[torch.Tensor, "B n"], X: Float[torch.Tensor, "B L n"], alpha: float, beta: float
) -> Float[torch.Tensor, "B n"]:
    """``∇E(s) = s/α − Σ_i x_i softmax_i(β Xs)`` (analytic)."""
    a, b = check_alpha(alpha), check_beta(beta)
    X, s = checked_inputs(X, ("state s", s))
    return s / a - readout(s, X, b)


def attention_step(
    x_query: Float[torch.Tensor, "B n"], X: Float[torch.Tensor, "B L n"], alpha: float, beta: float
) -> Float[torch.Tensor, "B n"]:
    """Softmax attention with ``W_PV = αI``, ``W_KQ = βI``: ``α Σ_i x_i softmax_i(β x_iᵀ x̃)``."""
    a, b = check_alpha(alpha), check_beta(beta)
    X, q = checked_inputs(X, ("query", x_query))
    return a * readout(q, X, b)


def gradient_step(
    s: Float[torch.Tensor, "B n"],
    X: Float[torch.Tensor, "B L n"],
    alpha: float,
    beta: float,
    gamma: float | None = None,
) -> Float[torch.Tensor, "B n"]:
    """``s − γ ∇E(s)``; γ = α (the default) from ``s = x̃`` is ``attention_step``."""
    a, b = check_alpha(alpha), check_beta(beta)
    g = check_gamma(gamma, a)
    X, s = checked_inputs(X, ("state s", s))
    return s - g * (s / a - readout(s, X, b))


def descend(
    x_query: Float[torch.Tensor, "B n"],
    X: Float[torch.Tensor, "B L n"],
    alpha: float,
    beta: float,
    gamma: float | None = None,
    n_steps: int = 1,
) -> Float[torch.Tensor, "T1 B n"]:
    """The trajectory ``s_0 = x̃, s_{t+1} = s_t − γ∇E(s_t)``, shape (n_steps + 1, B, n); γ = α is
    Hopfield retrieval ``s ← αX softmax(βXs)``. E is non-increasing along it for 0 < γ ≤ 2α."""
    a, b = check_alpha(alpha), check_beta(beta)
    g, T = check_gamma(gamma, a), check_steps(n_steps)
    X, s = checked_inputs(X, ("query", x_query))
    return descend_unchecked(s, X, a, b, g, T)


def descend_unchecked(
    s: Float[torch.Tensor, "B n"], X: Float[torch.Tensor, "B L n"], a: float, b: float, g: float, T: int
) -> Float[torch.Tensor, "T1 B n"]:
    """``descend`` without checking its inputs (they were checked once by the caller)."""
    out = [s]
    for _ in range(T):
        s = s - g * (s / a - readout(s, X, b))
        out.append(s)
    return torch.stack(out)
