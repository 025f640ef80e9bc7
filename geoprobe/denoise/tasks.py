"""In-context denoising tasks (arXiv 2502.05164): per-prompt random structure, clean context, one noisy query.

A prompt is ``L`` clean context tokens ``x_1..x_L`` in R^n drawn from the prompt's own structure and a query
``x̃ = x_{L+1} + z``, ``z ~ N(0, σZ² I_n)``; the target is the clean ``x_{L+1}``. The query is not part of the
context. Variances are given as variances (``signal_var`` = σ0², ``noise_var`` = σZ²), not standard deviations.

* linear: a random d-dim subspace per prompt (orthonormal basis from the QR of a Gaussian n×d matrix),
  coordinates ~ N(0, σ0²).
* mixture: k random unit-norm centres per prompt, equal weights; a token = centre + N(0, σ0² I_n).
* sphere: the sphere S^{d-1} of radius R in a random d-dim subspace, uniform. (The paper and the authors' code
  count the sphere's own dimension: their "d = 8" is S^8 in a 9-dim subspace, geoprobe's d = 9;
  :func:`subspace_dim` maps one convention to the other, ``--convention authors`` selects theirs.)

Warped geometry (``warp``): every token (context, clean target, noisy query) is multiplied by a fixed invertible
``A``, and the noise is added BEFORE warping, i.e. ``x̃' = A(x + z)`` (noise covariance σZ² AAᵀ in the warped
space); see docs/denoise.md for why this choice makes the optimum exactly equivariant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from jaxtyping import Float, Int

from geoprobe.errors import GeoprobeError
from geoprobe.serial import Record

TaskName = Literal["linear", "mixture", "sphere"]
TASKS: tuple[str, ...] = ("linear", "mixture", "sphere")
#: how ``--dim`` is read: geoprobe's d is the dimension of the subspace that holds the structure (the sphere is
#: S^{d−1}); the authors' d is the sphere's own dimension (S^d in a (d+1)-dim subspace). Linear: the same d.
CONVENTIONS: tuple[str, ...] = ("geoprobe", "authors")
#: the paper's reference settings (σ0² for the sphere is unused: its tokens lie exactly on the sphere)
DEFAULTS: dict[str, dict[str, float]] = {
    "linear": {"signal_var": 2.0, "noise_var": 1.0},
    "mixture": {"signal_var": 0.02, "noise_var": 0.1},
    "sphere": {"signal_var": 0.0, "noise_var": 0.1},
}


@dataclass(frozen=True, eq=False)
class DenoiseTask(Record):
    """One task family at fixed hyper-parameters (validated: a bad value is a one-line GeoprobeError)."""

    name: str = "linear"
    n: int = 16  # ambient dimension
    d: int = 8  # subspace / sphere dimension (linear, sphere)
    k: int = 8  # number of mixture centres (mixture)
    signal_var: float = 2.0  # σ0²: coordinate variance (linear) or within-cluster variance (mixture)
    noise_var: float = 1.0  # σZ²: query-noise variance
    radius: float = 1.0  # R (sphere)
    context_length: int = 500  # L

    def __post_init__(self) -> None:
        if self.name not in TASKS:
            raise GeoprobeError(f"unknown task {self.name!r}; pass --task linear, mixture or sphere")
        if self.n < 1:
            raise GeoprobeError(f"ambient dimension {self.n} is below 1; pass --ambient 1 or more")
        if self.context_length < 1:
            raise GeoprobeError(f"context length {self.context_length} is below 1; pass --context-length 1 or more")
        if self.name in ("linear", "sphere"):
            if not 1 <= self.d <= self.n:
                raise GeoprobeError(
                    f"subspace dimension {self.d} is not in [1, ambient dimension {self.n}]; "
                    f"pass --dim between 1 and {self.n} (or raise --ambient)"
                )
            if self.name == "sphere" and self.d < 2:
                raise GeoprobeError(
                    f"sphere dimension d = {self.d} is below 2 (S^0 is two points); pass --dim 2 or more"
                )
            if self.context_length <= self.d:
                raise GeoprobeError(
                    f"context length {self.context_length} is not larger than the subspace dimension "
                    f"{self.d}: the estimator is undefined; pass --context-length {self.d + 1} or more"
                )
        if self.name == "mixture" and self.k < 1:
            raise GeoprobeError(f"number of centres {self.k} is below 1; pass --clusters 1 or more")
        if not (math.isfinite(self.noise_var) and self.noise_var > 0):
            raise GeoprobeError(f"noise variance {self.noise_var} is not positive; pass --noise-var above 0")
        if self.name != "sphere" and not (math.isfinite(self.signal_var) and self.signal_var > 0):
            raise GeoprobeError(f"signal variance {self.signal_var} is not positive; pass --signal-var above 0")
        if self.name == "sphere" and not (math.isfinite(self.radius) and self.radius > 0):
            raise GeoprobeError(f"sphere radius {self.radius} is not positive; pass --radius above 0")

    def with_length(self, L: int) -> "DenoiseTask":
        return replace(self, context_length=int(L))

    def with_dim(self, d: int) -> "DenoiseTask":
        return replace(self, d=int(d))


def check_convention(convention: str) -> str:
    """``convention`` if known, else a one-line GeoprobeError naming the flag."""
    if convention not in CONVENTIONS:
        raise GeoprobeError(f"unknown convention {convention!r}; pass --convention geoprobe or authors")
    return convention


def subspace_dim(task: str, dim: int, convention: str = "geoprobe") -> int:
    """geoprobe's d (the dimension of the subspace holding the structure) for ``dim`` read in ``convention``:
    the authors' sphere dimension d is S^d, which lives in a (d+1)-dim subspace; every other case is unchanged."""
    check_convention(convention)
    return int(dim) + 1 if convention == "authors" and task == "sphere" else int(dim)


def convention_dim(task: str, d: int, convention: str = "geoprobe") -> int:
    """The inverse of :func:`subspace_dim`: geoprobe's subspace dimension ``d`` written in ``convention``."""
    check_convention(convention)
    return int(d) - 1 if convention == "authors" and task == "sphere" else int(d)


def make_task(name: str = "linear", **overrides: Any) -> DenoiseTask:
    """The task at the paper's reference settings, with ``overrides`` (``None`` values ignored)."""
    if name not in TASKS:
        raise GeoprobeError(f"unknown task {name!r}; pass --task linear, mixture or sphere")
    values: dict[str, Any] = dict(DEFAULTS[name])
    values.update({k: v for k, v in overrides.items() if v is not None})
    return DenoiseTask(name=name, **values)


@dataclass
class Prompts:
    """A batch of prompts. ``context`` (B, L, n), ``clean``/``noisy`` (B, n); the structure the oracle knows:
    ``basis`` (B, n, d) for linear/sphere, ``centres`` (B, n, k) for the mixture; ``warp`` the A applied (or None);
    ``labels`` (B, L+1) the mixture component of every token, the query's last (for the authors' count-weighted
    baseline, which reads them; no geoprobe estimator does)."""

    context: Float[np.ndarray, "B L n"]
    clean: Float[np.ndarray, "B n"]
    noisy: Float[np.ndarray, "B n"]
    basis: Float[np.ndarray, "B n d"] | None = None
    centres: Float[np.ndarray, "B n k"] | None = None
    warp: Float[np.ndarray, "n n"] | None = None
    labels: Int[np.ndarray, "B L1"] | None = None

    def __len__(self) -> int:
        return self.clean.shape[0]


def random_basis(rng: np.random.Generator, B: int, n: int, d: int) -> Float[np.ndarray, "B n d"]:
    """Orthonormal bases of B random d-dim subspaces of R^n (QR of Gaussian matrices, signs fixed by R's diagonal)."""
    q, r = np.linalg.qr(rng.standard_normal((B, n, d)))
    return q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]


def make_warp(n: int, seed: int, condition: float = 3.0) -> Float[np.ndarray, "n n"]:
    """A fixed invertible A = U diag(s) Vᵀ with singular values log-spaced over [1/√c, √c] (condition number c)."""
    rng = np.random.default_rng([seed, 0xA11])
    u = random_basis(rng, 1, n, n)[0]
    v = random_basis(rng, 1, n, n)[0]
    s = np.geomspace(1 / math.sqrt(condition), math.sqrt(condition), n)
    return (u * s) @ v.T


def sample(
    task: DenoiseTask, B: int, rng: np.random.Generator, *, L: int | None = None, warp: np.ndarray | None = None
) -> Prompts:
    """``B`` fresh prompts of ``task`` (context length ``L``, default the task's), float64, from ``rng``."""
    L = task.context_length if L is None else int(L)
    n = task.n
    basis = centres = j = None
    if task.name == "linear":
        basis = random_basis(rng, B, n, task.d)
        coords = rng.normal(0.0, math.sqrt(task.signal_var), (B, L + 1, task.d))
        tokens = coords @ basis.transpose(0, 2, 1)
    elif task.name == "sphere":
        basis = random_basis(rng, B, n, task.d)
        u = rng.standard_normal((B, L + 1, task.d))
        u *= task.radius / np.linalg.norm(u, axis=-1, keepdims=True)
        tokens = u @ basis.transpose(0, 2, 1)
    else:
        c = rng.standard_normal((B, n, task.k))
        centres = c / np.linalg.norm(c, axis=1, keepdims=True)
        j = rng.integers(task.k, size=(B, L + 1))
        tokens = np.take_along_axis(centres.transpose(0, 2, 1), j[:, :, None], axis=1)
        tokens = tokens + rng.normal(0.0, math.sqrt(task.signal_var), (B, L + 1, n))
    clean = tokens[:, L]
    noisy = clean + rng.normal(0.0, math.sqrt(task.noise_var), (B, n))
    context = tokens[:, :L]
    if warp is not None:
        context, clean, noisy = context @ warp.T, clean @ warp.T, noisy @ warp.T
    return Prompts(np.ascontiguousarray(context), clean, noisy, basis, centres, warp, j)
