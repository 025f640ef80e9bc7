"""What the energy view measures (arXiv 2502.05164): the (α, β) landscape of the one-step denoiser
and one descent step against many, as results with their figures.

``landscape`` maps the per-coordinate MSE of the one-step denoiser over an (α, β) grid (for a
fixed β the MSE is a quadratic in α, so the grid costs one softmax per β) and refines the best
cell with ``scipy.optimize.minimize`` over (log α, log β) with an autograd gradient.
``descent_comparison`` measures MSE and energy after 0, 1, …, T steps.

The energy, its gradient and its steps are in :mod:`geoprobe.denoise.energy`; inputs are checked
there once (``checked_inputs``) and the loops here use its unchecked forms.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np
import torch
from jaxtyping import Float

from geoprobe.denoise.energy import (
    attention_logits,
    check_alpha,
    check_beta,
    check_gamma,
    check_positive,
    check_steps,
    checked_inputs,
    descend_unchecked,
    energy_unchecked,
    readout,
)
from geoprobe.errors import GeoprobeError
from geoprobe.provenance import package_versions
from geoprobe.results import Result
from geoprobe.serial import json_float

_GRADIENT_FREE = {"nelder-mead", "powell", "cobyla", "cobyqa"}


# -- results: shared pieces ---------------------------------------------------------------------
class CheckedResult(Result):
    """A result whose ``__post_init__`` checks its values with one-line GeoprobeErrors: read back from a
    file, a failed check means the file is damaged."""

    @classmethod
    def from_body(cls, d: dict[str, Any]):  # -> Self
        try:
            return super().from_body(d)
        except GeoprobeError as exc:
            raise ValueError(str(exc)) from None


def _inputs_hash(*ts: torch.Tensor) -> str:
    h = hashlib.sha256()
    for t in ts:
        arr = np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float64))
        h.update(repr(arr.shape).encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def _provenance(extra: dict[str, Any] | None, *ts: torch.Tensor) -> dict[str, Any]:
    return {"versions": package_versions(), "inputs_sha256": _inputs_hash(*ts), **(extra or {})}


def _check_dims(n_samples: int, context_length: int, dim: int) -> None:
    for name, v in (("n_samples", n_samples), ("context_length", context_length), ("dim", dim)):
        if not isinstance(v, int) or v < 1:
            raise GeoprobeError(f"{name} {v!r} is not a positive integer; pass non-empty inputs")


# -- the (α, β) landscape of the one-step denoiser ------------------------------------------------
@dataclass(frozen=True, eq=False)
class EnergyLandscape(CheckedResult):
    """Per-coordinate MSE of ``αX softmax(βXx̃)`` against the clean points over an (α, β) grid, and
    the numerical minimum from the grid's best cell (reported as found, converged or not)."""

    KIND: ClassVar[str] = "geoprobe.denoise.energy_landscape"
    FILE: ClassVar[str] = "energy_landscape.json"
    WHAT: ClassVar[str] = "energy-landscape results file"
    FIX: ClassVar[str] = "pass the energy_landscape.json that 'geoprobe denoise' wrote"

    alphas: tuple[float, ...]
    betas: tuple[float, ...]
    mse: tuple[tuple[float, ...], ...]  # (len(alphas), len(betas))
    n_samples: int
    context_length: int
    dim: int
    mse_noisy: float  # the MSE of the noisy query itself (no denoising)
    alpha_star: float | None  # the minimiser's final point (None only if it was not finite)
    beta_star: float | None
    mse_star: float | None
    converged: bool
    message: str
    n_iterations: int
    method: str
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _axis("alphas", self.alphas, "--alpha"), _axis("betas", self.betas, "--beta")
        shape = (len(self.mse), *{len(r) for r in self.mse})
        if shape != (len(self.alphas), len(self.betas)):
            raise GeoprobeError(
                f"the mse grid has shape {shape}, not ({len(self.alphas)}, {len(self.betas)}) "
                f"for the alphas × betas axes; the result is damaged, re-run it"
            )
        if not all(math.isfinite(v) and v >= 0 for r in self.mse for v in r):
            raise GeoprobeError("the mse grid has a negative or non-finite value; the result is damaged, re-run it")
        _check_dims(self.n_samples, self.context_length, self.dim)
        if self.converged and None in (self.alpha_star, self.beta_star, self.mse_star):
            raise GeoprobeError("a converged minimiser needs a finite (alpha*, beta*, mse*); the result is damaged")

    @property
    def grid_argmin(self) -> tuple[int, int]:
        """(i_alpha, i_beta) of the smallest grid MSE."""
        i, j = np.unravel_index(int(np.argmin(np.asarray(self.mse))), (len(self.alphas), len(self.betas)))
        return int(i), int(j)

    @property
    def grid_min(self) -> tuple[float, float, float]:
        """(α, β, mse) at the best grid cell."""
        i, j = self.grid_argmin
        return self.alphas[i], self.betas[j], self.mse[i][j]


def _batch_chunk(B: int, L: int, n: int, chunk_elements: int) -> int:
    return max(1, min(B, chunk_elements // max(L, n)))


def _one_step_sums(
    X: torch.Tensor, q: torch.Tensor, c: torch.Tensor, betas: torch.Tensor, chunk_elements: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Σ_b ‖m_β(b)‖² and Σ_b m_β(b)·c_b per β, with ``m_β = X softmax(βXx̃)``; memory bounded by
    ``chunk_elements`` per (β chunk × batch chunk × max(L, n)) block."""
    B, L, n = X.shape
    bb = _batch_chunk(B, L, n, chunk_elements)
    nb = max(1, chunk_elements // (bb * max(L, n)))
    mm = torch.zeros(len(betas), dtype=X.dtype)
    mc = torch.zeros(len(betas), dtype=X.dtype)
    for s in range(0, B, bb):
        Xs, G, cs = X[s : s + bb], attention_logits(q[s : s + bb], X[s : s + bb]), c[s : s + bb]
        for t in range(0, len(betas), nb):
            w = torch.softmax(betas[t : t + nb, None, None] * G[None], dim=-1)  # (k, bb, L)
            m = torch.einsum("kbl,bln->kbn", w, Xs)
            mm[t : t + nb] += (m * m).sum((1, 2))
            mc[t : t + nb] += (m * cs[None]).sum((1, 2))
    return mm, mc


def _axis(name: str, values: Sequence[float], flag: str) -> torch.Tensor:
    vals = [
        check_positive(f"{name} grid value", v, f"pass {flag} grid values greater than 0", "the grid is in log axes")
        for v in values
    ]
    if not vals:
        raise GeoprobeError(f"the {name} grid is empty; pass at least one value ({flag})")
    if any(b <= a for a, b in zip(vals, vals[1:])):
        raise GeoprobeError(f"the {name} grid {vals} is not strictly increasing; pass sorted distinct values ({flag})")
    return torch.tensor(vals, dtype=torch.float64)


def landscape(
    X: Float[torch.Tensor, "B L n"],
    noisy: Float[torch.Tensor, "B n"],
    clean: Float[torch.Tensor, "B n"],
    alphas: Sequence[float],
    betas: Sequence[float],
    *,
    method: str = "BFGS",
    options: dict[str, Any] | None = None,
    chunk_elements: int = 1 << 22,
    provenance: dict[str, Any] | None = None,
) -> EnergyLandscape:
    """MSE per coordinate of the one-step denoiser ``αX softmax(βXx̃)`` over ``alphas × betas``, then
    ``scipy.optimize.minimize(method, options)`` over (log α, log β) from the best grid cell, with
    the exact gradient by autograd. ``provenance`` (seed, config hash, …) is stored beside the
    package versions and a sha256 of the inputs."""
    from scipy.optimize import minimize

    X, q, c = checked_inputs(X, ("noisy", noisy), ("clean", clean), dtype=torch.float64)
    a_ax, b_ax = _axis("alphas", alphas, "--alpha"), _axis("betas", betas, "--beta")
    B, L, n = X.shape
    N = B * n
    with torch.no_grad():
        mm, mc = _one_step_sums(X, q, c, b_ax, chunk_elements)
        cc = float((c * c).sum())
        grid = (a_ax[:, None] ** 2 * mm[None] - 2 * a_ax[:, None] * mc[None] + cc) / N
        grid = grid.clamp_min(0.0)  # rounding of the expanded quadratic near an exact fit
        mse_noisy = float(((q - c) ** 2).sum()) / N
    bb = _batch_chunk(B, L, n, chunk_elements)

    def objective(p: np.ndarray) -> tuple[float, np.ndarray]:
        x = torch.tensor(p, dtype=torch.float64, requires_grad=True)
        total = 0.0
        for s in range(0, B, bb):
            err = x[0].exp() * readout(q[s : s + bb], X[s : s + bb], x[1].exp()) - c[s : s + bb]
            part = (err * err).sum() / N
            part.backward()
            total += float(part.detach())
        return total, x.grad.numpy().copy()

    i, j = np.unravel_index(int(torch.argmin(grid)), tuple(grid.shape))
    x0 = np.log([float(a_ax[i]), float(b_ax[j])])
    gradient_free = method.lower() in _GRADIENT_FREE
    fun = (lambda p: objective(p)[0]) if gradient_free else objective
    res = minimize(fun, x0, jac=None if gradient_free else True, method=method, options=options)
    a_star, b_star = (math.exp(v) if math.isfinite(v) else math.nan for v in np.asarray(res.x, dtype=float))
    mse_star = float(res.fun)
    finite = all(math.isfinite(v) for v in (a_star, b_star, mse_star))
    return EnergyLandscape(
        alphas=tuple(float(v) for v in a_ax),
        betas=tuple(float(v) for v in b_ax),
        mse=tuple(tuple(float(v) for v in r) for r in grid),
        n_samples=B,
        context_length=L,
        dim=n,
        mse_noisy=mse_noisy,
        alpha_star=json_float(a_star),
        beta_star=json_float(b_star),
        mse_star=json_float(mse_star),
        converged=bool(res.success) and finite,
        message=str(res.message),
        n_iterations=int(getattr(res, "nit", 0)),
        method=method,
        provenance=_provenance(provenance, X, q, c),
    )


# -- one step vs many: attention vs Hopfield retrieval -----------------------------------------
@dataclass(frozen=True, eq=False)
class DescentComparison(CheckedResult):
    """MSE, mean energy and distance to the nearest context token after 0 (the noisy query), 1,
    …, n_steps gradient steps on E."""

    KIND: ClassVar[str] = "geoprobe.denoise.descent"
    FILE: ClassVar[str] = "descent.json"
    WHAT: ClassVar[str] = "energy-descent results file"
    FIX: ClassVar[str] = "pass the descent.json that 'geoprobe denoise' wrote"

    alpha: float
    beta: float
    gamma: float
    n_steps: int
    mse: tuple[float, ...]  # (n_steps + 1,) per coordinate, against the clean points
    energy: tuple[float, ...]  # (n_steps + 1,) mean over the batch
    token_distance: tuple[float, ...]  # (n_steps + 1,) mean_b min_i ‖s_t − x_i‖ / √n
    max_energy_increase: float  # max over rows and steps of E(s_{t+1}) − E(s_t); ≤ 0 up to rounding when γ ≤ 2α
    n_samples: int
    context_length: int
    dim: int
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_alpha(self.alpha), check_beta(self.beta), check_gamma(self.gamma, self.alpha)
        T = check_steps(self.n_steps)
        for name in ("mse", "energy", "token_distance"):
            if len(getattr(self, name)) != T + 1:
                raise GeoprobeError(
                    f"{name} has {len(getattr(self, name))} entries, not n_steps + 1 = {T + 1}; "
                    f"the result is damaged, re-run it"
                )
        if not all(math.isfinite(v) and v >= 0 for v in (*self.mse, *self.token_distance)):
            raise GeoprobeError("mse or token_distance has a negative or non-finite value; the result is damaged")
        _check_dims(self.n_samples, self.context_length, self.dim)

    @property
    def best_step(self) -> int:
        """The number of steps with the smallest MSE."""
        return int(np.argmin(self.mse))


def descent_comparison(
    X: Float[torch.Tensor, "B L n"],
    noisy: Float[torch.Tensor, "B n"],
    clean: Float[torch.Tensor, "B n"],
    alpha: float,
    beta: float,
    n_steps: int,
    gamma: float | None = None,
    *,
    provenance: dict[str, Any] | None = None,
) -> DescentComparison:
    """Descend E from the noisy queries for ``n_steps`` (γ = α by default) and score every step."""
    a, b = check_alpha(alpha), check_beta(beta)
    g, T = check_gamma(gamma, a), check_steps(n_steps)
    X, q, c = checked_inputs(X, ("noisy", noisy), ("clean", clean), dtype=torch.float64)
    B, L, n = X.shape
    with torch.no_grad():
        traj = descend_unchecked(q, X, a, b, g, T)  # (T+1, B, n)
        mse = ((traj - c[None]) ** 2).mean((1, 2))
        E = torch.stack([energy_unchecked(s, X, a, b) for s in traj])  # (T+1, B)
        dist = torch.stack([((X - s[:, None]) ** 2).sum(-1).min(-1).values.sqrt() for s in traj]) / math.sqrt(n)
        rise = float((E[1:] - E[:-1]).max()) if T else 0.0
    return DescentComparison(
        alpha=a,
        beta=b,
        gamma=g,
        n_steps=T,
        mse=tuple(float(v) for v in mse),
        energy=tuple(float(v) for v in E.mean(1)),
        token_distance=tuple(float(v) for v in dist.mean(1)),
        max_energy_increase=rise,
        n_samples=B,
        context_length=L,
        dim=n,
        provenance=_provenance(provenance, X, q, c),
    )
