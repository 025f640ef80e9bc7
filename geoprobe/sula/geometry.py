"""SULA geometry: where the final-token values of SULA prompts sit on the value manifold.

At one layer, the final-token value vectors of the main condition's prompts (KV heads
concatenated) are z-scored and their PCA (``geoprobe.analysis.manifold.ValueManifold``) gives
ONE basis; every condition's prompts are projected into it (``transform``), so the main run and
the controls share coordinates. PC1 is oriented (``geoprobe.analysis.alignment.orientation``)
so that it grows with the model's label entropy on the main prompts.

Reported per condition: ρ_S(PC1, H) over prompts (paired BCa bootstrap CI) for the predictive
entropy (``rho_pc1_bayes``) and the posterior entropy (``rho_pc1_posterior``), which are equal
(the two targets have the same ranks), and Pearson r(PC1, H) for each (``r_pc1_bayes``,
``r_pc1_posterior``; the authors' pipeline reports Pearson against the posterior entropy); mean
PC1 per k (bootstrap CI over that k's prompts: the trajectory), and ρ(k, mean PC1), Spearman
and Pearson over the values of k, with a percentile CI from resampling prompts within each k.

ρ(k, mean PC1) is kept (old files hold it, and the Python API) but is no longer reported: over five
values of k a Spearman ρ is ±1 whenever the five means are monotone, and its interval is then [±1, ±1],
so it cannot tell a condition from its controls. What is reported instead, ρ_S(k, PC1) across prompts
and the paired contrast of main with each control (``k_tracking``, ``k_contrast``), is computed by
:mod:`geoprobe.sula.tracking` over all the conditions at once (``run_sula`` adds it).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.alignment import orientation, pearson, spearman
from geoprobe.analysis.stats import Estimate, bootstrap_ci, chunk_size, quiet
from geoprobe.serial import Record
from geoprobe.sula.tracking import KContrast, KTracking


def final_values(
    model: Any,
    texts: Sequence[str],
    layer: int,
    *,
    batch_size: int = 16,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Float[np.ndarray, "n D"], int]:
    """Final-token value vectors at ``layer`` (heads concatenated, float64, one row per text)
    and the resolved (non-negative) layer index; ``progress(done, total)`` as batches finish."""
    from geoprobe.capture import CaptureConfig, capture

    cap = capture(
        model,
        list(texts),
        CaptureConfig(layers=(layer,), keys=False, key_weights=False, batch_size=batch_size),
        progress=progress,
    )
    v = np.asarray(cap.layer("values", cap.layers[0]), dtype=np.float64)  # the layer's own heads and widths
    return v.reshape(v.shape[0], -1), int(cap.layers[0])


@dataclass(frozen=True)
class Basis:
    """A fitted shared PCA basis and its orientation (+1/−1)."""

    manifold: Any  # ValueManifold
    orientation: int
    pc1_ratio: float

    def pc1(self, x: np.ndarray) -> np.ndarray:
        return self.manifold.transform(x)[:, 0] * self.orientation


def fit_basis(values: Float[np.ndarray, "n D"], orient_by: Float[np.ndarray, " n"]) -> Basis:
    """PCA of the standardised ``values``; PC1's sign makes ρ_S(PC1, ``orient_by``) >= 0."""
    from geoprobe.analysis.manifold import ValueManifold

    vm = ValueManifold(n_components=2).fit(values)
    o = int(orientation(vm.coords_[:, 0], np.asarray(orient_by, dtype=np.float64)))
    return Basis(vm, o, float(vm.explained_variance_ratio_[0]))


@dataclass(frozen=True, eq=False)
class SulaGeometry(Record):
    """PC1 statistics of one condition in the shared basis. The ``*_posterior`` fields and
    ``r_pc1_bayes`` are absent (None) in files from 0.1.0; ``k_tracking`` (ρ_S(k, PC1) across prompts)
    and ``k_contrast`` (main − this condition, paired; None for main) in files from before issue 37.
    ``rho_k_pc1`` and ``r_k_pc1`` (over the per-k means) are kept for old files and not reported."""

    rho_pc1_bayes: Estimate  # Spearman over prompts, against the predictive entropy
    rho_k_pc1: Estimate  # Spearman over the values of k of the mean PC1 (±1 whenever monotone: not reported)
    r_k_pc1: Estimate  # Pearson over the values of k of the mean PC1 (not reported)
    k_values: tuple[int, ...]
    pc1_per_k: tuple[Estimate, ...]
    rho_pc1_posterior: Estimate | None = field(default=None, metadata={"omit_none": True})  # Spearman, posterior H
    r_pc1_bayes: Estimate | None = field(default=None, metadata={"omit_none": True})  # Pearson, predictive H
    r_pc1_posterior: Estimate | None = field(default=None, metadata={"omit_none": True})  # Pearson, posterior H
    k_tracking: KTracking | None = field(default=None, metadata={"omit_none": True})  # ρ_S(k, PC1), prompts
    k_contrast: KContrast | None = field(default=None, metadata={"omit_none": True})  # main − this condition

    def __post_init__(self) -> None:
        object.__setattr__(self, "k_values", tuple(int(k) for k in self.k_values))
        object.__setattr__(self, "pc1_per_k", tuple(self.pc1_per_k))
        if len(self.k_values) != len(self.pc1_per_k):
            raise ValueError(f"{len(self.k_values)} values of k but {len(self.pc1_per_k)} per-k PC1 means")


def _resampled_means(g: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_resamples`` bootstrap resamples of ``g``, drawn ~32 MB at a time (the same draws as all
    at once)."""
    step = chunk_size(1, g.size)
    return np.concatenate(
        [
            g[rng.integers(0, g.size, size=(min(step, n_resamples - s), g.size))].mean(axis=1)
            for s in range(0, n_resamples, step)
        ]
    )


def _k_correlation(
    k: np.ndarray, pc1: np.ndarray, stat: Any, confidence: float, n_resamples: int, rng: np.random.Generator
) -> Estimate:
    """``stat`` (spearman/pearson) of (k value, mean PC1 at k) with a percentile CI from
    resampling prompts within each k (stratified bootstrap)."""
    ks = np.unique(k)
    if ks.size < 3:
        return Estimate(math.nan, math.nan, math.nan, confidence)
    groups = [pc1[k == v] for v in ks]
    value = float(stat(ks.astype(np.float64), np.array([g.mean() for g in groups])))
    if not math.isfinite(value):
        return Estimate(math.nan, math.nan, math.nan, confidence)
    means = np.stack([_resampled_means(g, n_resamples, rng) for g in groups], axis=1)
    draws = np.asarray(stat(np.broadcast_to(ks.astype(np.float64), means.shape), means, axis=-1), dtype=np.float64)
    draws = draws[np.isfinite(draws)]
    if draws.size == 0:
        return Estimate(value, value, value, confidence)
    lo, hi = np.quantile(draws, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Estimate(value, float(lo), float(hi), confidence)


def geometry_stats(
    k: Sequence[int],
    pc1: Sequence[float],
    bayes_entropy: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    random_state: int | np.random.Generator | None = 0,
    posterior_entropy: Sequence[float] | None = None,
) -> SulaGeometry:
    """ρ_S(PC1, H), ρ(k, mean PC1) and the per-k mean PC1 of one condition; ``bayes_entropy`` is
    the predictive entropy. With ``posterior_entropy`` also ρ_S(PC1, posterior H) and Pearson
    r(PC1, H) for both targets."""
    k = np.asarray(k, dtype=np.int64)
    pc1 = np.asarray(pc1, dtype=np.float64)
    hb = np.asarray(bayes_entropy, dtype=np.float64)
    rng = np.random.default_rng(random_state)
    kw = dict(confidence=confidence, n_resamples=n_resamples)
    nan = Estimate(math.nan, math.nan, math.nan, confidence)

    def corr(stat: Any, h: np.ndarray) -> Estimate:
        if pc1.size < 3 or np.ptp(h) == 0:
            return nan
        return bootstrap_ci((pc1, h), stat, random_state=rng, **kw)

    rng_rho = copy.deepcopy(rng)  # the posterior's ρ resamples the same prompts: equal ranks give an equal CI
    rho = bootstrap_ci((pc1, hb), spearman, random_state=rng, **kw) if pc1.size >= 3 else nan
    ks = tuple(int(x) for x in np.unique(k))
    per_k = tuple(bootstrap_ci(pc1[k == v], np.mean, random_state=rng, **kw) for v in ks)
    with quiet():
        rho_k = _k_correlation(k, pc1, spearman, confidence, n_resamples, rng)
        r_k = _k_correlation(k, pc1, pearson, confidence, n_resamples, rng)
    extra: dict[str, Estimate] = {}
    if posterior_entropy is not None:
        hp = np.asarray(posterior_entropy, dtype=np.float64)
        if hp.shape != hb.shape:
            raise ValueError(f"posterior entropy has shape {hp.shape}, the predictive entropy {hb.shape}")
        with quiet():
            extra = {
                "rho_pc1_posterior": bootstrap_ci((pc1, hp), spearman, random_state=rng_rho, **kw)
                if pc1.size >= 3
                else nan,
                "r_pc1_bayes": corr(pearson, hb),
                "r_pc1_posterior": corr(pearson, hp),
            }
    return SulaGeometry(rho_pc1_bayes=rho, rho_k_pc1=rho_k, r_k_pc1=r_k, k_values=ks, pc1_per_k=per_k, **extra)
