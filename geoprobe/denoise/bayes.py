"""Bayes-optimal (oracle) denoisers and the paper's finite-context estimators, on numpy float64 arrays.

Oracle: knows the prompt's structure (subspace, centres, radius) and the variances; its output is the posterior
mean E[x | x̃], which minimises the expected squared error. Finite-context: built from the context tokens only
(plus the known noise variance σZ²). Shapes: context (B, L, n), queries (B, n). Derivations in docs/denoise.md.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float
from scipy.special import ive, logsumexp, softmax

from geoprobe.denoise.tasks import DenoiseTask, Prompts


def linear_oracle(
    noisy: Float[np.ndarray, "B n"], basis: Float[np.ndarray, "B n d"], signal_var: float, noise_var: float
) -> Float[np.ndarray, "B n"]:
    """σ0²/(σ0²+σZ²) · P x̃ with P = U Uᵀ the prompt's projector (the noise outside the subspace is dropped)."""
    coef = np.einsum("bnd,bn->bd", basis, noisy)
    return signal_var / (signal_var + noise_var) * np.einsum("bnd,bd->bn", basis, coef)


def linear_bayes_mse(n: int, d: int, signal_var: float, noise_var: float) -> float:
    """The oracle's MSE per coordinate, (d/n) · σZ²σ0²/(σ0²+σZ²) (1/3 at the reference d=8, n=16, σ0²=2, σZ²=1)."""
    return d / n * noise_var * signal_var / (signal_var + noise_var)


def mixture_oracle(
    noisy: Float[np.ndarray, "B n"],
    centres: Float[np.ndarray, "B n k"],
    signal_var: float,
    noise_var: float,
    weights: Float[np.ndarray, "B k"] | None = None,
) -> Float[np.ndarray, "B n"]:
    """a_res x̃ + a_cl · M softmax(β Mᵀx̃ − β‖μ_j‖²/2 + ln w) with s = σ0²+σZ², β = 1/s, a_res = σ0²/s, a_cl = σZ²/s.

    Derivation: x̃ | j ~ N(μ_j, s I) gives p(j | x̃) ∝ w_j exp(μ_jᵀx̃/s − ‖μ_j‖²/(2s)); E[x | x̃, j] = μ_j +
    (σ0²/s)(x̃ − μ_j).
    The ‖μ_j‖² term is kept (it is constant for unit-norm centres and then drops out of the softmax)."""
    s = signal_var + noise_var
    k = centres.shape[-1]
    logw = np.log(np.full(centres.shape[::2], 1.0 / k)) if weights is None else np.log(weights)
    logits = (np.einsum("bnk,bn->bk", centres, noisy) - 0.5 * np.sum(centres**2, axis=1)) / s + logw
    post = softmax(logits, axis=-1)
    return signal_var / s * noisy + noise_var / s * np.einsum("bnk,bk->bn", centres, post)


def vmf_mean_length(kappa: Float[np.ndarray, "..."], d: int) -> Float[np.ndarray, "..."]:
    """A_d(κ) = I_{d/2}(κ) / I_{d/2−1}(κ): the mean resultant length of a von Mises–Fisher law on S^{d−1}
    (exponentially scaled Bessel functions, so large κ does not overflow; A_d(0) = 0)."""
    kappa = np.asarray(kappa, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = ive(d / 2, kappa) / ive(d / 2 - 1, kappa)
    return np.where(kappa > 0, out, 0.0)


def sphere_oracle(
    noisy: Float[np.ndarray, "B n"], basis: Float[np.ndarray, "B n d"], radius: float, noise_var: float
) -> Float[np.ndarray, "B n"]:
    """Posterior mean of a uniform point on the radius-R sphere in span(U): R·A_d(κ)·Px̃/|Px̃|, κ = R|Px̃|/σZ²."""
    d = basis.shape[-1]
    p = np.einsum("bnd,bn->bd", basis, noisy)
    r = np.linalg.norm(p, axis=-1)
    a = vmf_mean_length(radius * r / noise_var, d)
    scale = np.where(r > 0, radius * a / np.where(r > 0, r, 1.0), 0.0)
    return np.einsum("bnd,bd->bn", basis, p * scale[:, None])


def _unwarp(prompts: Prompts) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if prompts.warp is None:
        return prompts.context, prompts.noisy, None
    inv = np.linalg.inv(prompts.warp)
    return prompts.context @ inv.T, prompts.noisy @ inv.T, prompts.warp


def _rewarp(x: np.ndarray, warp: np.ndarray | None) -> np.ndarray:
    return x if warp is None else x @ warp.T


def oracle(task: DenoiseTask, prompts: Prompts) -> Float[np.ndarray, "B n"]:
    """The Bayes-optimal denoiser of ``task`` (warped prompts: A · oracle(A⁻¹x̃), the posterior mean of Ax)."""
    _, noisy, warp = _unwarp(prompts)
    if task.name == "linear":
        est = linear_oracle(noisy, prompts.basis, task.signal_var, task.noise_var)
    elif task.name == "mixture":
        est = mixture_oracle(noisy, prompts.centres, task.signal_var, task.noise_var)
    else:
        est = sphere_oracle(noisy, prompts.basis, task.radius, task.noise_var)
    return _rewarp(est, warp)


def context_subspace(context: Float[np.ndarray, "B L n"], d: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-d principal directions (B, n, d) of the uncentred second moment XᵀX/L and their eigenvalues (B, d)."""
    L = context.shape[1]
    w, v = np.linalg.eigh(np.einsum("bli,blj->bij", context, context) / L)
    return v[:, :, ::-1][:, :, :d], w[:, ::-1][:, :d]


def empirical_prior_mean(
    context: Float[np.ndarray, "B L n"], noisy: Float[np.ndarray, "B n"], noise_var: float
) -> Float[np.ndarray, "B n"]:
    """Σ_i x_i softmax_i(x_iᵀx̃/σZ² − ‖x_i‖²/(2σZ²)): the posterior mean when the prior is the context's
    empirical distribution (one softmax-attention step with W_KQ = I/σZ², W_PV = I, plus the norm term)."""
    logits = (np.einsum("bln,bn->bl", context, noisy) - 0.5 * np.sum(context**2, axis=-1)) / noise_var
    w = np.exp(logits - logsumexp(logits, axis=-1, keepdims=True))
    return np.einsum("bln,bl->bn", context, w)


def finite_context(task: DenoiseTask, prompts: Prompts) -> Float[np.ndarray, "B n"]:
    """The paper's context-only estimators: linear, PCA subspace (top d) + shrinkage with σ0² estimated as the
    mean top-d eigenvalue; sphere, PCA subspace + R estimated as the mean context norm, then the vMF posterior
    mean; mixture, the empirical-prior posterior mean. Warped prompts are unwarped first (A is known)."""
    context, noisy, warp = _unwarp(prompts)
    if task.name == "mixture":
        return _rewarp(empirical_prior_mean(context, noisy, task.noise_var), warp)
    basis, eig = context_subspace(context, task.d)
    if task.name == "linear":
        s0 = eig.mean(axis=-1)
        coef = np.einsum("bnd,bn->bd", basis, noisy) * (s0 / (s0 + task.noise_var))[:, None]
        return _rewarp(np.einsum("bnd,bd->bn", basis, coef), warp)
    radius = np.linalg.norm(context, axis=-1).mean(axis=-1)
    p = np.einsum("bnd,bn->bd", basis, noisy)
    r = np.linalg.norm(p, axis=-1)
    a = vmf_mean_length(radius * r / task.noise_var, task.d)
    scale = np.where(r > 0, radius * a / np.where(r > 0, r, 1.0), 0.0)
    return _rewarp(np.einsum("bnd,bd->bn", basis, p * scale[:, None]), warp)


def per_prompt_mse(estimate: Float[np.ndarray, "B n"], clean: Float[np.ndarray, "B n"]) -> Float[np.ndarray, " B"]:
    """Squared error per coordinate of each prompt (the loss, before averaging over prompts)."""
    return np.mean((np.asarray(estimate, dtype=np.float64) - clean) ** 2, axis=-1)


def sphere_mc_posterior_mean(
    noisy: Float[np.ndarray, " n"],
    basis: Float[np.ndarray, "n d"],
    radius: float,
    noise_var: float,
    n_samples: int,
    rng: np.random.Generator,
) -> Float[np.ndarray, " n"]:
    """Self-normalised importance sampling of E[x | x̃] with uniform proposals on the sphere (for tests)."""
    d = basis.shape[1]
    u = rng.standard_normal((n_samples, d))
    u *= radius / np.linalg.norm(u, axis=1, keepdims=True)
    x = u @ basis.T
    logw = -np.sum((noisy - x) ** 2, axis=1) / (2 * noise_var)
    w = np.exp(logw - logw.max())
    return (w[:, None] * x).sum(0) / w.sum()


def bayes_linear_predicted_gain(task: DenoiseTask) -> float | None:
    """The predicted scalar of W_PV·W_KQ for linear attention as L → ∞ (Σ̂ → second moment): 1/(σ0²+σZ²) on the
    linear task, 1/(R²/d + σZ²) on the sphere (second-moment matching, ours); None for the mixture."""
    if task.name == "linear":
        return 1.0 / (task.signal_var + task.noise_var)
    if task.name == "sphere":
        return 1.0 / (task.radius**2 / task.d + task.noise_var)
    return None


__all__ = [
    "linear_oracle",
    "linear_bayes_mse",
    "mixture_oracle",
    "vmf_mean_length",
    "sphere_oracle",
    "oracle",
    "context_subspace",
    "empirical_prior_mean",
    "finite_context",
    "per_prompt_mse",
    "sphere_mc_posterior_mean",
    "bayes_linear_predicted_gain",
]
