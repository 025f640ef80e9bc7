"""Per-head positional priors: fits, reference shapes, bootstrap CIs and the head classes.

Head classes (first rule that applies; thresholds are module constants):

1. ``sink-dominated``: sink mass (attention on the excluded first positions) ≥ SINK_MASS (0.5).
2. ``flat (NoPE-like)``: KL(p ‖ uniform) ≤ FLAT_KL_BITS (0.05 bits) over the window.
3. ``local/previous-token``: p(0) + p(1) ≥ LOCAL_MASS (0.5).
4. ``unfit``: the generalised-Gaussian fit did not converge (reason stored).
5. ``ALiBi-like``: β̂ ≤ BETA_SPLIT (1.5), else ``Gaussian-like``. ``ambiguous`` is set when the
   β̂ bootstrap CI contains BETA_SPLIT (the class then rests on the point estimate alone).

Reference shapes, each fitted to the same window and scored by KL(p ‖ shape) in bits: uniform
(no parameter), Laplace (β = 1; μ, σ fitted), Gaussian (β = 2; μ, σ fitted), and, for RoPE models,
q(Δ) ∝ exp(s·r(Δ)) with r the RoPE decay curve of :func:`geoprobe.positional.prior.rope_decay`
and one fitted scale s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.stats import Estimate
from geoprobe.positional.bootstrap import linearised_refit, percentile_ci
from geoprobe.positional.prior import fit_fixed_shape, fit_generalised_gaussian, fit_rope_scale, kl_bits, rope_decay
from geoprobe.serial import Record

CLASSES = ("flat (NoPE-like)", "ALiBi-like", "Gaussian-like", "local/previous-token", "sink-dominated", "unfit")
SINK_MASS = 0.5
FLAT_KL_BITS = 0.05
LOCAL_MASS = 0.5
BETA_SPLIT = 1.5


@dataclass(frozen=True, eq=False)
class HeadPrior(Record):
    """One head's distance profile summary and fits. Parameters are None where the fit failed."""

    layer: int
    head: int
    sink_mass: float
    local_mass: float  # p(0) + p(1) of the renormalised window
    mu: Estimate | None
    sigma: Estimate | None
    beta: Estimate | None
    fit_kl: float | None  # KL(p ‖ fitted generalised Gaussian), bits
    reason: str  # why the fit failed ("" when it converged)
    kl_ref: dict[str, float]  # reference shape → KL(p ‖ shape), bits
    ref_params: dict[str, list[float]]  # laplace/gaussian: [μ, σ]; rope: [s]
    head_class: str
    ambiguous: bool

    def __post_init__(self) -> None:
        if self.head_class not in CLASSES:
            raise ValueError(f"unknown head class {self.head_class!r}")
        fitted = [self.mu is not None, self.sigma is not None, self.beta is not None]
        if len(set(fitted)) != 1:
            raise ValueError("mu, sigma and beta are all present or all None")
        if fitted[0] == bool(self.reason):
            raise ValueError("a head has fitted parameters exactly when no failure reason is stated")
        if not (0.0 <= self.sink_mass <= 1.0 + 1e-6 and 0.0 <= self.local_mass <= 1.0 + 1e-6):
            raise ValueError(f"masses out of [0, 1]: sink {self.sink_mass}, local {self.local_mass}")
        if "uniform" not in self.kl_ref:
            raise ValueError("every head carries the KL to the uniform reference")

    @property
    def converged(self) -> bool:
        return self.beta is not None


def classify(sink_mass: float, kl_uniform: float, local_mass: float, beta: Estimate | None) -> tuple[str, bool]:
    """(class, ambiguous) by the rules of the module docstring."""
    if sink_mass >= SINK_MASS:
        return "sink-dominated", False
    if kl_uniform <= FLAT_KL_BITS:
        return "flat (NoPE-like)", False
    if local_mass >= LOCAL_MASS:
        return "local/previous-token", False
    if beta is None:
        return "unfit", False
    ambiguous = bool(beta.low <= BETA_SPLIT <= beta.high)
    return ("ALiBi-like" if beta.value <= BETA_SPLIT else "Gaussian-like"), ambiguous


def fit_head(
    profile: Float[np.ndarray, " Dp1"],
    resampled: Float[np.ndarray, "R Dp1"] | None,
    *,
    layer: int,
    head: int,
    sink_mass: float,
    rope: tuple[float, int] | None = None,
    confidence: float = 0.95,
) -> HeadPrior:
    """Fit one head's renormalised profile; ``resampled`` (bootstrap profiles) give the CIs."""
    p = np.asarray(profile, dtype=np.float64)
    p = p / p.sum()
    D = p.size - 1
    fit = fit_generalised_gaussian(p)
    est: list[Estimate | None] = [None, None, None]
    if fit.converged:
        assert fit.mu is not None and fit.sigma is not None and fit.beta is not None
        if resampled is not None and len(resampled) >= 2:
            boot = linearised_refit(resampled, p, (fit.mu, fit.sigma, fit.beta))
            lo, hi = percentile_ci(boot, confidence)
        else:
            lo = hi = np.full(3, np.nan)
        est = [
            Estimate(v, a, b, confidence) if np.isfinite(a) else Estimate(v, math.nan, math.nan, confidence)
            for v, a, b in zip((fit.mu, fit.sigma, fit.beta), lo, hi)
        ]
    kl_ref = {"uniform": float(kl_bits(p, np.full(p.size, -math.log(p.size))))}
    ref_params: dict[str, list[float]] = {}
    for name, b in (("laplace", 1.0), ("gaussian", 2.0)):
        mu, sigma, kl = fit_fixed_shape(p, b)
        kl_ref[name], ref_params[name] = kl, [mu, sigma]
    if rope is not None:
        s, kl = fit_rope_scale(p, rope_decay(D, rope[0], rope[1]))
        kl_ref["rope"], ref_params["rope"] = kl, [s]
    local = float(p[:2].sum())
    cls, amb = classify(sink_mass, kl_ref["uniform"], local, est[2])
    return HeadPrior(
        layer=layer,
        head=head,
        sink_mass=float(np.clip(sink_mass, 0.0, 1.0)),
        local_mass=local,
        mu=est[0],
        sigma=est[1],
        beta=est[2],
        fit_kl=fit.kl,
        reason=fit.reason,
        kl_ref=kl_ref,
        ref_params=ref_params,
        head_class=cls,
        ambiguous=amb,
    )


def fit_heads(
    window: Float[np.ndarray, "L n H Dp1"],
    sink: Float[np.ndarray, "L n H"],
    layers: tuple[int, ...],
    *,
    n_resamples: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
    rope: tuple[float, int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[tuple[HeadPrior, ...], np.ndarray]:
    """Fit every head from per-prompt distance windows; bootstrap over prompts (the same
    ``n_resamples`` resamples for every head). Returns (heads, renormalised profiles (L, H, D+1))."""
    from geoprobe.positional.bootstrap import resample_weights

    L, n, H, Dp1 = window.shape
    mean = window.mean(1)
    profiles = mean / np.maximum(mean.sum(-1, keepdims=True), 1e-300)
    W = resample_weights(n, n_resamples, seed) if n_resamples >= 2 and n >= 2 else None
    sink_mass = sink.mean(1)
    heads = []
    for li in range(L):
        boot = np.einsum("rn,nhd->hrd", W, window[li]) if W is not None else None
        for h in range(H):
            heads.append(
                fit_head(
                    profiles[li, h],
                    boot[h] if boot is not None else None,
                    layer=layers[li],
                    head=h,
                    sink_mass=float(sink_mass[li, h]),
                    rope=rope,
                    confidence=confidence,
                )
            )
            if progress is not None:
                progress(li * H + h + 1, L * H)
    return tuple(heads), profiles
