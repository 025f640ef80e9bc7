"""Positional priors: the BAM bias, the generalised Gaussian over distances, and fitting it.

BAM (Bayesian Attention Mechanism) reads a positional encoding as a prior over key positions:
a per-head bias on the attention logits

    b(Δ) = −exp(θα) · (|Δ − μ| + ε)^θβ,        Δ = query position − key position ≥ 0,

so that softmax(scores + b) multiplies the content likelihood by the prior exp(b(Δ)). θβ = 0 is
flat (no positional preference, NoPE-like), θβ = 1 a Laplace prior (ALiBi's linear bias), θβ = 2
a Gaussian. With ε = 0 and σ = exp(−θα/θβ) the normalised prior is the generalised Gaussian

    p(Δ) ∝ exp(−(|Δ − μ| / σ)^β),   β = θβ,

which is what :func:`fit_generalised_gaussian` fits to a measured distance profile.

Fitting objective: the measured profile p(Δ) over the window Δ = 0..D is a distribution; the
fit minimises the cross-entropy −Σ p(Δ) log q(Δ; μ, σ, β), i.e. KL(p ‖ q), with q normalised over
the same window. Bounds: 0 ≤ μ ≤ D, σ ∈ [SIGMA_MIN, SIGMA_MAX_FACTOR·(D+1)], β ∈ [BETA_MIN,
BETA_MAX]. A fit whose optimiser fails, or whose σ or β ends on a bound, is *not converged*:
its parameters are reported as None with the reason (μ may sit at 0: a profile peaked at the
query itself is the common case, not a failure). So is a fit that collapses onto one distance
(≥ 99 % of q on a single Δ) or is flat over the window (max q / min q < 1.05): in both σ and β
are not identifiable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from jaxtyping import Float

_LN2 = math.log(2.0)
SIGMA_MIN = 1e-6
SIGMA_MAX_FACTOR = 10.0
BETA_MIN = 0.1
BETA_MAX = 10.0
#: a parameter within this relative distance of a bound (log scale for σ) counts as on it
BOUND_TOL = 1e-3
#: a fit putting this much mass on one distance is a spike: σ and β are not identifiable
DEGENERATE_MASS = 0.99
#: a fit whose largest and smallest q(Δ) differ by less than this fraction is flat: likewise
FLAT_RATIO = 0.05
#: smoothing of |Δ − μ| inside the optimiser's objective only (differentiable in μ at Δ = μ); every
#: reported q(Δ) and KL uses the exact family (at β < 1 the smoothing moves q(0) by up to ~0.04)
FIT_SMOOTH = 1e-3
#: ε of the BAM bias, as in BAM's released code (issue 20: 1e-6 moved attention weights by up to 7e-3)
BAM_EPS = 1e-5


# -- the prior ----------------------------------------------------------------------------------
def bam_bias(
    delta: Float[np.ndarray, "*d"], theta_alpha: float, theta_beta: float, mu: float = 0.0, eps: float = BAM_EPS
) -> Float[np.ndarray, "*d"]:
    """BAM's logit bias b(Δ) = −exp(θα)·(|Δ − μ| + ε)^θβ at distances ``delta``."""
    d = np.abs(np.asarray(delta, dtype=np.float64) - mu) + eps
    return -math.exp(theta_alpha) * d**theta_beta


def bam_prior(
    delta: Float[np.ndarray, " D"], theta_alpha: float, theta_beta: float, mu: float = 0.0, eps: float = BAM_EPS
) -> Float[np.ndarray, " D"]:
    """The normalised prior softmax(b(Δ)) over the given distances."""
    b = bam_bias(delta, theta_alpha, theta_beta, mu, eps)
    e = np.exp(b - b.max())
    return e / e.sum()


def bam_logit_bias(
    T: int,
    theta_alpha: Float[np.ndarray, "*h"] | float,
    theta_beta: Float[np.ndarray, "*h"] | float,
    mu: Float[np.ndarray, "*h"] | float = 0.0,
    eps: float = BAM_EPS,
) -> Float[np.ndarray, "*h T T"]:
    """A (…, T, T) bias to add to causal attention scores: entry [i, j] is b(i − j) for keys j ≤ i
    and −inf above the diagonal (the causal mask). Per-head parameters broadcast over leading axes."""
    if T < 1:
        raise ValueError(f"sequence length {T} must be at least 1")
    ta, tb, m = (np.asarray(x, dtype=np.float64)[..., None, None] for x in (theta_alpha, theta_beta, mu))
    i = np.arange(T)
    delta = (i[:, None] - i[None, :]).astype(np.float64)
    bias = -np.exp(ta) * (np.abs(delta - m) + eps) ** tb
    return np.where(delta >= 0, bias, -np.inf)


def bam_from_gg(sigma: float, beta: float) -> tuple[float, float]:
    """(θα, θβ) of the BAM bias (ε = 0) equal to the generalised Gaussian (σ, β)."""
    return -beta * math.log(sigma), beta


def gg_log_prior(
    delta: Float[np.ndarray, " D"],
    mu: Float[np.ndarray, "*b"] | float,
    sigma: Float[np.ndarray, "*b"] | float,
    beta: Float[np.ndarray, "*b"] | float,
    smooth: float = 0.0,
) -> Float[np.ndarray, "*b D"]:
    """log q(Δ) of the generalised Gaussian, normalised over ``delta``; parameters broadcast.
    ``smooth`` > 0 replaces |Δ − μ| by sqrt((Δ − μ)² + smooth²) (the fit's objective only)."""
    mu, sigma, beta = (np.asarray(x, dtype=np.float64)[..., None] for x in (mu, sigma, beta))
    diff = np.asarray(delta, dtype=np.float64) - mu
    dist = np.sqrt(diff**2 + smooth**2) if smooth else np.abs(diff)
    z = -((dist / sigma) ** beta)
    return z - _logsumexp(z)


def gg_prior(delta: Float[np.ndarray, " D"], mu: float, sigma: float, beta: float) -> Float[np.ndarray, " D"]:
    """The generalised Gaussian q(Δ) ∝ exp(−(|Δ − μ|/σ)^β), normalised over ``delta`` (exact: no smoothing)."""
    return np.exp(gg_log_prior(delta, mu, sigma, beta))


def _logsumexp(z: np.ndarray) -> np.ndarray:
    m = z.max(-1, keepdims=True)
    return m + np.log(np.exp(z - m).sum(-1, keepdims=True))


def kl_bits(p: Float[np.ndarray, "*b D"], log_q: Float[np.ndarray, "*b D"]) -> Float[np.ndarray, "*b"]:
    """KL(p ‖ q) in bits from ``p`` and ``log q`` (terms with p = 0 are 0)."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - log_q), 0.0)
    return np.maximum(t.sum(-1), 0.0) / _LN2


# -- fitting ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GGFit:
    """One generalised-Gaussian fit. ``mu``/``sigma``/``beta`` are None unless ``converged``."""

    mu: float | None
    sigma: float | None
    beta: float | None
    kl: float | None  # KL(measured ‖ fit) in bits
    converged: bool
    reason: str  # "" when converged

    def __post_init__(self) -> None:
        params = (self.mu, self.sigma, self.beta, self.kl)
        if self.converged and (any(x is None for x in params) or self.reason):
            raise ValueError("a converged fit needs every parameter and no failure reason")
        if not self.converged and (any(x is not None for x in params[:3]) or not self.reason):
            raise ValueError("a fit that did not converge carries no parameters and states its reason")
        if self.sigma is not None and self.sigma <= 0:
            raise ValueError(f"sigma {self.sigma} must be positive")


def _bounds(D: int) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float]]:
    return (0.0, float(D)), (math.log(SIGMA_MIN), math.log(SIGMA_MAX_FACTOR * (D + 1))), (BETA_MIN, BETA_MAX)


def _grid_start(p: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """The best (μ, log σ, β) of a coarse grid (the optimiser's starting point)."""
    D = int(delta[-1])
    (_, _), (ls_lo, ls_hi), _ = _bounds(D)
    mus = np.unique([0.0, float(np.argmax(p))])
    lsig = np.linspace(ls_lo + 0.5, ls_hi - 0.5, 14)
    betas = np.array([0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0])
    M, S, B = np.meshgrid(mus, lsig, betas, indexing="ij")
    logq = gg_log_prior(delta, M.ravel(), np.exp(S.ravel()), B.ravel(), FIT_SMOOTH)
    ce = -(logq @ p)
    k = int(np.argmin(ce))
    return np.array([M.ravel()[k], S.ravel()[k], B.ravel()[k]])


def fit_generalised_gaussian(profile: Float[np.ndarray, " D"], *, max_iter: int = 500) -> GGFit:
    """Fit q(Δ) ∝ exp(−(|Δ − μ|/σ)^β) to ``profile`` over Δ = 0..len−1 by minimising KL(profile ‖ q)
    (L-BFGS-B from the best point of a coarse grid). See the module docstring for bounds and failures."""
    from scipy.optimize import minimize

    p = np.asarray(profile, dtype=np.float64)
    if p.ndim != 1 or p.size < 3:
        raise ValueError(f"a profile needs at least 3 distances, got shape {p.shape}")
    if not np.all(np.isfinite(p)) or (p < 0).any() or p.sum() <= 0:
        return GGFit(None, None, None, None, False, "the profile is not a finite non-negative distribution")
    p = p / p.sum()
    delta = np.arange(p.size, dtype=np.float64)
    bounds = _bounds(p.size - 1)

    def objective(x: np.ndarray) -> float:
        return float(-(gg_log_prior(delta, x[0], math.exp(x[1]), x[2], FIT_SMOOTH) @ p))

    x0 = _grid_start(p, delta)
    res = minimize(objective, x0, method="L-BFGS-B", bounds=bounds, options={"maxiter": max_iter})
    mu, lsig, beta = (float(v) for v in res.x)
    if not res.success:
        return GGFit(None, None, None, None, False, f"optimiser did not converge ({_message(res)})")
    (_, _), (ls_lo, ls_hi), (b_lo, b_hi) = bounds
    span = ls_hi - ls_lo
    if lsig - ls_lo < BOUND_TOL * span:
        return GGFit(
            None,
            None,
            None,
            None,
            False,
            f"σ hit its lower bound {SIGMA_MIN:g} (a peak at Δ = μ with a tail heavier than the family)",
        )
    if ls_hi - lsig < BOUND_TOL * span:
        return GGFit(
            None,
            None,
            None,
            None,
            False,
            f"σ hit its upper bound {math.exp(ls_hi):.3g} (the profile is flatter than the window)",
        )
    if beta - b_lo < BOUND_TOL * (b_hi - b_lo):
        return GGFit(None, None, None, None, False, f"β hit its lower bound {BETA_MIN} (heavier tail than the family)")
    if b_hi - beta < BOUND_TOL * (b_hi - b_lo):
        return GGFit(None, None, None, None, False, f"β hit its upper bound {BETA_MAX} (a box, not a bump)")
    q = gg_prior(delta, mu, math.exp(lsig), beta)
    if q.max() >= DEGENERATE_MASS:
        return GGFit(
            None,
            None,
            None,
            None,
            False,
            f"the fit collapsed onto the single distance Δ = {int(q.argmax())} (σ and β are not identifiable)",
        )
    if q.min() >= q.max() / (1.0 + FLAT_RATIO):
        return GGFit(None, None, None, None, False, "the fit is flat over the window (σ and β are not identifiable)")
    kl = float(kl_bits(p, np.log(q)))
    return GGFit(mu, math.exp(lsig), beta, kl, True, "")


def _message(res: object) -> str:
    msg = getattr(res, "message", "")
    return (msg.decode() if isinstance(msg, bytes) else str(msg)).strip().rstrip(".")


def fit_fixed_shape(profile: Float[np.ndarray, " D"], beta: float) -> tuple[float, float, float]:
    """(μ, σ, KL bits) of the best generalised Gaussian with β held at ``beta`` (the Laplace and
    Gaussian reference shapes); bounds as for the full fit, so a flat profile gives σ at its bound."""
    from scipy.optimize import minimize

    p = np.asarray(profile, dtype=np.float64)
    p = p / p.sum()
    delta = np.arange(p.size, dtype=np.float64)
    (m_b, s_b, _) = _bounds(p.size - 1)
    best = None
    for mu0 in np.unique([0.0, float(np.argmax(p))]):
        for ls0 in np.linspace(s_b[0] + 0.5, s_b[1] - 0.5, 6):
            val = float(-(gg_log_prior(delta, mu0, math.exp(ls0), beta, FIT_SMOOTH) @ p))
            if best is None or val < best[0]:
                best = (val, mu0, ls0)
    assert best is not None
    res = minimize(
        lambda x: float(-(gg_log_prior(delta, x[0], math.exp(x[1]), beta, FIT_SMOOTH) @ p)),
        np.array(best[1:]),
        method="L-BFGS-B",
        bounds=(m_b, s_b),
    )
    mu, lsig = float(res.x[0]), float(res.x[1])
    return mu, math.exp(lsig), float(kl_bits(p, gg_log_prior(delta, mu, math.exp(lsig), beta)))


def rope_decay(D: int, rope_theta: float, rotary_dim: int) -> Float[np.ndarray, " D"]:
    """RoPE's long-term decay for aligned query and key: r(Δ) = mean over the rotary frequency pairs
    i = 0..rotary_dim/2 − 1 of cos(Δ·θ_i), θ_i = rope_theta^(−2i/rotary_dim), at Δ = 0..D.

    The score q·R(Δ)k of a query and key that are equal and spread evenly over the pairs is
    proportional to r(Δ); RoFormer (Su et al. 2021, §3.4.3) bounds the same sum to show that
    RoPE's attention decays with relative distance."""
    if rotary_dim < 2:
        raise ValueError(f"rotary_dim {rotary_dim} has no frequency pair")
    i = np.arange(rotary_dim // 2, dtype=np.float64)
    freqs = rope_theta ** (-2.0 * i / rotary_dim)
    return np.cos(np.arange(D + 1, dtype=np.float64)[:, None] * freqs[None, :]).mean(1)


def fit_rope_scale(profile: Float[np.ndarray, " D"], decay: Float[np.ndarray, " D"]) -> tuple[float, float]:
    """(s, KL bits) of q(Δ) ∝ exp(s·r(Δ)) with s ∈ [0, 1000] (one free scale: the logit size of an
    aligned query–key pair) fitted by minimising KL(profile ‖ q)."""
    from scipy.optimize import minimize_scalar

    p = np.asarray(profile, dtype=np.float64)
    p = p / p.sum()
    r = np.asarray(decay, dtype=np.float64)

    def logq(s: float) -> np.ndarray:
        z = s * r
        return z - _logsumexp(z)

    res = minimize_scalar(lambda s: float(-(logq(s) @ p)), bounds=(0.0, 1000.0), method="bounded")
    s = float(res.x)
    return s, float(kl_bits(p, logq(s)))
