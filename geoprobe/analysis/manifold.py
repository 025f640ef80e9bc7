"""Value manifold (arXiv 2512.23752 §4.2, criterion 1 of §4.4): how low-dimensional are the
final-token value vectors of a layer across prompts?

Per layer: X is n × D with row i the final-token value vectors of prompt i, concatenated over
the KV heads (D = Hkv · d_head). Every column is z-scored over the prompts
(``z_ij = (x_ij - mean_j) / sd_j``, ddof 0; exactly constant columns dropped) and the PCA of
z (float64 SVD) gives explained-variance ratios r_1 ≥ r_2 ≥ … (k = min(n - 1, D_kept) of
them, sum 1). Reported: PC1 = r_1, PC1+PC2 = r_1 + r_2, participation ratio
PR = (Σ λ)² / Σ λ² = 1 / Σ r². Each comes with a bootstrap CI over prompts and a matched null
(same n × d, no cross-feature structure; ``geoprobe.analysis.stats.matched_null``).

The CI is the bootstrap standard-error interval ``value ± z_{(1+c)/2} · SE`` (clipped to the
quantity's range), SE from ``scipy.stats.bootstrap`` resampling prompts and re-running the
whole estimator (re-standardising each resample). Percentile intervals are not used: a
resample leaves out about 37 % of the prompts and repeats others, and repeated rows inflate PC1
when n ≲ D, so the bootstrap distribution sits above the estimate (for pure noise at n = 160,
D = 192 nearly all of it does) while its spread is still usable.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from jaxtyping import Bool, Float

from geoprobe.analysis.alignment import orientation as _orientation
from geoprobe.analysis.stats import (
    Estimate,
    NullBand,
    NullKind,
    RandomState,
    as_matrix,
    chunk_size,
    constant_columns,
    matched_null,
    one_blas_thread,
    participation_ratio,
    quiet,
    se_interval,
    spectrum_summary,
    zscore,
)
from geoprobe.analysis.workers import check_stop, worker_pool
from geoprobe.serial import Record


class ValueManifold:
    """PCA of standardised value vectors (scikit-learn style).

    ``fit(X)`` sets ``mean_``, ``scale_`` (column sd; 1 for constant columns or without
    ``standardize``), ``kept_features_`` (non-constant columns), ``components_`` (k, D_kept),
    ``explained_variance_ratio_`` (k,), ``coords_`` (n, k), ``participation_ratio_`` (of the full
    spectrum), ``n_samples_``, ``n_features_``. Signs are deterministic: in every component the
    loading with the largest |value| is positive (the first such loading on ties)."""

    def __init__(self, n_components: int | None = None, standardize: bool = True) -> None:
        self.n_components = n_components
        self.standardize = standardize

    def fit(self, X: Float[np.ndarray, "n D"]) -> "ValueManifold":
        from sklearn.decomposition import PCA

        X = as_matrix(X)
        n, D = X.shape
        kept = ~constant_columns(X)
        k_full = min(n - 1, int(kept.sum()))
        if k_full < 1:
            raise ValueError(f"no variance to analyse: {n} sample(s), {int(kept.sum())} non-constant feature(s)")
        if self.n_components is not None and self.n_components < 1:
            raise ValueError(f"n_components={self.n_components} must be >= 1")
        k = k_full if self.n_components is None else min(self.n_components, k_full)
        self.mean_ = X.mean(axis=0)
        self.scale_ = X.std(axis=0) if self.standardize else np.ones(D)
        self.scale_[~kept] = 1.0
        self.kept_features_: Bool[np.ndarray, " D"] = kept
        z = self._z(X)
        if n <= z.shape[1]:
            # n ≤ D: eigendecomposition of the n × n Gram matrix z zᵀ (2-3× faster than sklearn's
            # SVD here; the same spectrum and, up to sign, the same components zᵀu/√λ).
            self._center = np.zeros(z.shape[1])
            lam, u = np.linalg.eigh(z @ z.T)
            lam, u = np.clip(lam[::-1], 0.0, None), u[:, ::-1]
            comps = (z.T @ u[:, :k] / np.sqrt(np.maximum(lam[:k], np.finfo(float).tiny))).T
            ratios = lam[:k_full] / lam.sum()
        else:
            pca = PCA(n_components=k_full, svd_solver="covariance_eigh").fit(z)
            comps, ratios, self._center = pca.components_[:k], pca.explained_variance_ratio_, pca.mean_
        top = np.abs(comps).argmax(axis=1)
        self.components_ = comps * np.sign(comps[np.arange(k), top])[:, None]
        self.explained_variance_ratio_ = ratios[:k].copy()
        self.participation_ratio_ = participation_ratio(ratios)
        self.n_samples_, self.n_features_ = n, D
        self.coords_ = self.transform(X)
        return self

    def _z(self, X: np.ndarray) -> np.ndarray:
        return ((X - self.mean_) / self.scale_)[:, self.kept_features_]

    def transform(self, X: Float[np.ndarray, "m D"]) -> Float[np.ndarray, "m k"]:
        """Coordinates of new rows: the fitted standardisation, then projection on the components."""
        X = as_matrix(X)
        if X.shape[1] != self.n_features_:
            raise ValueError(f"X has {X.shape[1]} features, the fit had {self.n_features_}")
        return (self._z(X) - self._center) @ self.components_.T


def spectrum_se(x: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap SE of (PC1, PC1+PC2, PR) over prompts; each resample is re-standardised.

    A resample repeats prompts: with counts c_i over its m distinct prompts, the PCA of the
    resample equals the weighted PCA of those m rows, whose nonzero spectrum is that of the
    m × m matrix (√c z)(√c z)ᵀ with z standardised under the weights. m ≈ 0.63 n, so this is
    exact and about 4× cheaper than the n × n Gram matrix of the repeated rows.

    A resample without variance (one prompt drawn n times, probability n^(1−n): 1/9 at n = 3,
    1/64 at n = 4, below 10⁻³ from n = 5) has no spectrum; it is left out and the SE is that of
    the resamples that have one (NaN when fewer than two do)."""
    n, d = x.shape
    stats = np.full((3, n_resamples), np.nan)

    def one(b: int, draw: np.ndarray) -> None:
        check_stop()
        counts = np.bincount(draw, minlength=n)
        rows = np.flatnonzero(counts)
        c = counts[rows].astype(np.float64)[:, None]
        xr = x[rows]
        mean = (c * xr).sum(0) / n
        xc = xr - mean
        sd = np.sqrt((c * xc * xc).sum(0) / n)
        live = sd > 1e-12 * np.maximum(1.0, np.abs(mean))
        if not live.any():
            return  # no variance in this resample: no spectrum (stays NaN, left out below)
        z = np.sqrt(c) * (xc[:, live] / sd[live])
        stats[:, b] = spectrum_summary(z[None])[:, 0]

    step = chunk_size(1, n)  # resampled indices drawn ~32 MB at a time (the same draws as all at once)
    with worker_pool(2) as pool:  # resamples are independent; LAPACK releases the GIL
        for start in range(0, n_resamples, step):
            idx = rng.integers(0, n, size=(min(step, n_resamples - start), n))
            list(pool.map(one, range(start, start + len(idx)), idx))
    ok = np.isfinite(stats).all(axis=0)
    if ok.sum() < 2:
        return np.full(3, np.nan)
    return stats[:, ok].std(axis=1, ddof=1)


@dataclass(frozen=True)
class _LayerFit:
    """What a profile needs from one layer's PCA: PC1/PC2 ratios, PR, PC1/PC2 coordinates."""

    ratios: np.ndarray  # (2,) explained-variance ratios of PC1 and PC2
    participation_ratio: float
    coords: np.ndarray  # (n, 2)
    kept: np.ndarray  # (D,) bool


_GRAM_ELEMENTS = 4_000_000  # an n × n Gram matrix above this many entries (32 MB): the D × D covariance instead


def _fit_or_none(x: np.ndarray) -> _LayerFit | None:
    """The top-two PCA of one layer, as ValueManifold computes it (same standardisation, same
    deterministic signs) but without the full eigendecomposition: the two leading eigenpairs
    of the Gram matrix (LAPACK dsyevr subset), total variance tr G and Σλ² = ‖G‖²_F for the PR.
    None when x has no variance (every prompt's vector equal)."""
    import scipy.linalg
    import scipy.stats

    kept = ~constant_columns(x)
    n = x.shape[0]
    if not kept.any() or n < 2:
        return None
    z = zscore(x[:, kept])
    k = min(2, n - 1, int(kept.sum()))
    if n > z.shape[1] and n * n > _GRAM_ELEMENTS:  # many prompts: the D × D covariance, never n × n
        c = z.T @ z  # the same nonzero eigenvalues as z zᵀ; its eigenvectors are the loadings
        tot, fro2, m = float(np.trace(c)), float(np.einsum("ij,ij->", c, c)), c.shape[0]
        lam, comps = scipy.linalg.eigh(c, subset_by_index=[m - k, m - 1], driver="evr", check_finite=False)
        lam, comps = np.clip(lam[::-1], 0.0, None), comps[:, ::-1]
    else:
        g = z @ z.T
        tot, fro2 = float(np.trace(g)), float(np.einsum("ij,ij->", g, g))
        m = g.shape[0]
        lam, u = scipy.linalg.eigh(g, subset_by_index=[m - k, m - 1], driver="evr", check_finite=False)
        lam, u = np.clip(lam[::-1], 0.0, None), u[:, ::-1]
        comps = z.T @ u / np.sqrt(np.maximum(lam, np.finfo(float).tiny))  # (D_kept, k) unit loadings
    comps *= np.sign(comps[np.abs(comps).argmax(axis=0), np.arange(k)])  # largest |loading| positive
    coords = np.zeros((n, 2))
    coords[:, :k] = z @ comps
    ratios = np.zeros(2)
    ratios[:k] = lam / tot
    return _LayerFit(ratios, tot**2 / fro2, coords, kept)


def _workers(tasks: int) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(tasks, cpus))


def frozen_array(a: Any, shape: tuple[int, ...], what: str) -> Float[np.ndarray, "..."]:
    """``a`` as a read-only float64 array of ``shape``, finite (a ValueError naming ``what`` otherwise)."""
    a = np.array(a, dtype=np.float64)
    if a.shape != shape:
        raise ValueError(f"{what} has shape {a.shape}, expected {shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what} contains NaN or Inf")
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class ManifoldProfile(Record):
    """Value-manifold statistics of every captured layer of one capture.

    ``pc1_coords`` (L, n) and ``coords`` (n, 2 per scatter layer) are raw PCA coordinates
    (sign convention of ValueManifold); multiply PC1 by ``orientation[layer]`` to make it
    grow with next-token entropy. Two profiles are equal when their ``to_dict()`` are."""

    model: str
    layers: tuple[int, ...]
    n: int
    d: int  # value dimension per layer (heads concatenated), before dropping constant columns
    pc1: tuple[Estimate, ...]
    pc12: tuple[Estimate, ...]
    pr: tuple[Estimate, ...]
    null: tuple[NullBand, ...]
    beats_null_pc1: tuple[bool, ...]
    coords: dict[int, Float[np.ndarray, "n 2"]]
    next_entropy: Float[np.ndarray, " n"]
    orientation: dict[int, int]
    pc1_coords: Float[np.ndarray, "L n"]

    def __post_init__(self) -> None:
        layers = tuple(int(x) for x in self.layers)
        object.__setattr__(self, "layers", layers)
        for name in ("pc1", "pc12", "pr", "null"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "beats_null_pc1", tuple(bool(b) for b in self.beats_null_pc1))
        L = len(layers)
        if L == 0 or len(set(layers)) != L:
            raise ValueError(f"layers {layers} must be non-empty and distinct")
        if self.n < 2 or self.d < 1:
            raise ValueError(f"n={self.n} prompts and d={self.d} features: need n >= 2 and d >= 1")
        lengths = {k: len(getattr(self, k)) for k in ("pc1", "pc12", "pr", "null", "beats_null_pc1")}
        if any(v != L for v in lengths.values()):
            raise ValueError(f"{L} layers but lengths {lengths}")
        for e in self.pc1 + self.pc12:
            if not isinstance(e, Estimate) or any(v < 0 or v > 1 + 1e-9 for v in (e.value, e.low, e.high)):
                raise ValueError(f"explained-variance ratio {e} is not an Estimate in [0, 1]")
        if any(not isinstance(e, Estimate) or e.value < 1 - 1e-9 for e in self.pr):
            raise ValueError("participation ratios must be Estimates >= 1")
        if any(not isinstance(b, NullBand) or b.n != self.n for b in self.null):
            raise ValueError(f"null bands must be NullBands with n = {self.n}")
        derived = tuple(bool(e.value > b.pc1.high) for e, b in zip(self.pc1, self.null))
        if self.beats_null_pc1 != derived:
            raise ValueError(f"beats_null_pc1 {self.beats_null_pc1} disagrees with pc1 > null upper {derived}")
        coords = {int(k): frozen_array(v, (self.n, 2), f"coords[{k}]") for k, v in self.coords.items()}
        if not set(coords) <= set(layers):
            raise ValueError(f"scatter layers {sorted(coords)} are not all in {layers}")
        object.__setattr__(self, "coords", coords)
        object.__setattr__(self, "next_entropy", frozen_array(self.next_entropy, (self.n,), "next_entropy"))
        object.__setattr__(self, "pc1_coords", frozen_array(self.pc1_coords, (L, self.n), "pc1_coords"))
        orient = {int(k): int(v) for k, v in self.orientation.items()}
        if set(orient) != set(layers) or any(v not in (1, -1) for v in orient.values()):
            raise ValueError(f"orientation must map every layer to +1 or -1, got {orient}")
        object.__setattr__(self, "orientation", orient)


def _per_layer(values: Any, L: int) -> list[np.ndarray]:
    """``values`` (an (L, n, D) array or L arrays (n, D_l) with one n) as L float64 (n, D_l) arrays."""
    if isinstance(values, np.ndarray) or not isinstance(values, Sequence):
        arr = np.asarray(values, dtype=np.float64)
        if arr.ndim != 3 or arr.shape[0] != L:
            raise ValueError(f"values {arr.shape} must be (L, n, D) with L = {L} layers")
        return list(arr)
    out = [np.asarray(v, dtype=np.float64) for v in values]
    if len(out) != L or any(v.ndim != 2 or v.shape[0] != out[0].shape[0] for v in out):
        raise ValueError(f"values must be {L} arrays (n, D_l) with the same n, got {[v.shape for v in out]}")
    return out


def value_manifold(
    values: Float[np.ndarray, "L n D"] | Sequence[Float[np.ndarray, "n D_l"]],
    layers: Sequence[int],
    next_entropy: Float[np.ndarray, " n"],
    *,
    model: str = "",
    scatter_layers: Sequence[int] = (),
    n_resamples: int = 200,
    null_draws: int = 200,
    null_kind: NullKind = "permute",
    confidence: float = 0.95,
    random_state: RandomState = 0,
    ci_layers: Sequence[int] | None = None,
) -> ManifoldProfile:
    """ValueManifold per layer with bootstrap CIs (``n_resamples``) and a matched null
    (``null_draws`` draws of ``null_kind``; a gaussian null depends only on n × d and is drawn
    once per distinct d). The final layer is always a scatter layer. ``ci_layers`` limits the
    bootstrap (the costly part: one eigenproblem per resample) to those layers; the others get
    point estimates with NaN interval ends. Deterministic for a given ``random_state`` (one
    child generator per layer, so a layer's CI does not depend on which other layers have one).

    ``values`` may also be one (n, D_l) array per layer, for models whose layers differ in value width
    (``Capture.per_layer``); the profile's ``d`` is then the widest layer's."""
    values = _per_layer(values, len(layers))
    entropy = np.asarray(next_entropy, dtype=np.float64)
    layers = tuple(int(x) for x in layers)
    L, n, D = len(values), values[0].shape[0], max(v.shape[1] for v in values)
    if entropy.shape != (n,) or not np.all(np.isfinite(entropy)):
        raise ValueError(f"next_entropy must be {n} finite numbers, got shape {entropy.shape}")
    for layer, v in zip(layers, values):
        if not np.all(np.isfinite(v)):
            bad = np.argwhere(~np.isfinite(v))[0]
            raise ValueError(f"values contain NaN/Inf (layer {layer}, prompt {bad[0]}, coordinate {bad[1]})")
    if n < 3:
        raise ValueError(f"{n} prompts; PC1+PC2 with a bootstrap CI needs at least 3")
    if n_resamples < 2 or null_draws < 1:
        raise ValueError(f"n_resamples={n_resamples} (>= 2) and null_draws={null_draws} (>= 1)")
    scatter = {layers[-1], *(int(x) for x in scatter_layers)}
    if not scatter <= set(layers):
        raise ValueError(f"scatter layers {sorted(scatter - set(layers))} are not among the layers {layers}")
    rngs = [g.spawn(2) for g in np.random.default_rng(random_state).spawn(L)]  # (bootstrap, null) per layer
    with quiet(), one_blas_thread(), worker_pool(_workers(L)) as pool:
        fits = list(pool.map(_fit_or_none, values))  # None: no variance at all (e.g. one shared final token)
        kept = [x[:, vm.kept] if vm is not None else x[:, :0] for x, vm in zip(values, fits)]
        want = set(layers) if ci_layers is None else {int(x) for x in ci_layers}
        nan3 = np.full(3, np.nan)
        ses = pool.map(
            lambda i: (
                spectrum_se(kept[i], n_resamples, rngs[i][0]) if layers[i] in want and fits[i] is not None else nan3
            ),
            range(L),
        )
        if null_kind == "gaussian":  # depends on n × d only: one null per distinct d
            first_of = {xk.shape[1]: i for i, xk in reversed(list(enumerate(kept)))}
            by_d = {
                dk: pool.submit(matched_null, None, n, dk, "gaussian", null_draws, rngs[i][1], confidence)
                for dk, i in first_of.items()
            }
            nulls = [by_d[xk.shape[1]].result() for xk in kept]
        else:
            nulls = list(
                pool.map(
                    lambda i: matched_null(
                        kept[i], kind=null_kind, draws=null_draws, random_state=rngs[i][1], confidence=confidence
                    ),
                    range(L),
                )
            )
        ses = list(ses)
    pc1, pc12, pr, coords, first = [], [], [], {}, np.empty((L, n))
    for i, (layer, vm, se) in enumerate(zip(layers, fits, ses)):
        if vm is None:  # undefined: NaN estimates, zero coordinates (the report shows n/a)
            nan = Estimate(math.nan, math.nan, math.nan, confidence)
            pc1.append(nan), pc12.append(nan), pr.append(nan)
            first[i] = 0.0
            if layer in scatter:
                coords[layer] = np.zeros((n, 2))
            continue
        r, k = vm.ratios, min(n - 1, int(vm.kept.sum()))
        pc1.append(se_interval(r[0], se[0], confidence, 0.0, 1.0))
        pc12.append(se_interval(r[:2].sum(), se[1], confidence, 0.0, 1.0))
        pr.append(se_interval(vm.participation_ratio, se[2], confidence, 1.0, float(k)))
        first[i] = vm.coords[:, 0]
        if layer in scatter:
            coords[layer] = vm.coords.copy()
    orient = _orientation(first, entropy)
    return ManifoldProfile(
        model=model,
        layers=layers,
        n=n,
        d=D,
        pc1=tuple(pc1),
        pc12=tuple(pc12),
        pr=tuple(pr),
        null=tuple(nulls),
        beats_null_pc1=tuple(bool(e.value > b.pc1.high) for e, b in zip(pc1, nulls)),
        coords=coords,
        next_entropy=entropy,
        orientation={layer: int(o) for layer, o in zip(layers, orient)},
        pc1_coords=first,
    )
