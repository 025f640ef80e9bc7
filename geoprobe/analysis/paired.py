"""Paired bootstrap over one shared set of prompts, and what is read from its draws: intervals, p-values
with multiplicity control, the first index from which a flag holds, the first crossing of a level.

Arrays in, arrays out; nothing here knows a sweep or a model. Conventions: ``idx`` (B, n) holds B
resamples of n prompt indices (drawn once, used for every cell that saw the same prompts, which is what
makes a bootstrap *paired*); a statistic's draws put the resample axis LAST, ``(..., B)``, beside its
estimate ``(...)``.

* :func:`pca_resampled`: PC1 share and top-k loadings of each resample of an n × D matrix, standardised
  as :class:`geoprobe.analysis.manifold.ValueManifold` standardises (columns z-scored over the rows,
  ddof 0, constant columns dropped). A resample that repeats prompt i c_i times is the weighted data set
  of its distinct rows (weights c_i): its weighted mean, standard deviation and covariance
  ``Σ c_i z_i z_iᵀ`` are those of the repeated rows, exactly (the trick of ``manifold.spectrum_se``): the
  top-k eigenpairs (LAPACK dsyevr, index subset) of the smaller of the m × m Gram matrix of its m ≈ 0.63 n
  distinct rows (√c z)(√c z)ᵀ and the D × D one. The standardisation runs on chunks of resamples at once
  (about 4 MB of rows each, reused: the means from the counts, one product, the variances from the centred
  rows); the Gram matrix and dsyevr then go one resample at a time, each on its own distinct rows (padding
  a chunk to its widest resample would cost more, and numpy's batched ``eigh``, every eigenpair, takes
  twice dsyevr's time for the top three of a 48 × 48 matrix).
* :func:`spearman_resampled`, :func:`mean_resampled`, :func:`reduction_resampled` (the focusing
  reduction ``100 (1 − mean(last) / mean(first))`` of :mod:`geoprobe.analysis.focusing`).
* :func:`percentile_interval` (nominal); :func:`max_t_interval`: simultaneous intervals over a family
  by the max-|t| (sup-t) method — ``T*_jb = (θ*_jb − mean_b θ*_j) / SE_j``, ``c`` the ``confidence``
  quantile of ``max_j |T*_jb|``, interval ``θ̂_j ± c · SE_j`` — which covers every member of the family at
  once with probability ``confidence`` (asymptotically) and, unlike Bonferroni, needs only the 95th
  percentile of the draws, not their 0.02th. The draws are centred on their own mean, not on θ̂: a
  member whose bootstrap is biased (PC1 of resampled rows sits above the sample's) would otherwise set
  ``c`` for the whole family;
* :func:`bootstrap_p`: the two-sided normal p-value of ``θ̂ / SE*`` (SE* the draws' standard deviation;
  a percentile p-value cannot fall below 2/(B + 1), which Holm over a hundred tests could never
  reach); :func:`holm`: Holm's step-down adjustment.
* :func:`first_sustained`, :func:`first_reaching`, :func:`progress_fraction`: emergence along an axis
  of checkpoints.
* :func:`hierarchical_indices`, :func:`pool_runs`: a two-level bootstrap — training runs resampled,
  then prompts — for a statistic averaged over runs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from jaxtyping import Bool, Float, Int

from geoprobe.analysis.stats import RandomState, one_blas_thread, quiet
from geoprobe.analysis.workers import check_stop

_LIVE = 1e-12  # a column whose (weighted) sd is below this × max(1, |mean|) is constant in that resample
_CHUNK_BYTES = 4 << 20  # one chunk of resamples' standardised rows: about a core's L2 cache


def resample_indices(n: int, n_resamples: int, random_state: RandomState = 0) -> Int[np.ndarray, "B n"]:
    """``n_resamples`` bootstrap resamples of ``n`` indices (with replacement), one per row."""
    if n < 1 or n_resamples < 1:
        raise ValueError(f"n={n} and n_resamples={n_resamples} must be >= 1")
    return np.random.default_rng(random_state).integers(0, n, size=(n_resamples, n))


def identity_indices(n: int) -> Int[np.ndarray, "1 n"]:
    """The sample itself as one 'resample' (every statistic's estimate comes from this row)."""
    return np.arange(n)[None, :]


def resample_counts(idx: Int[np.ndarray, "B m"], n: int) -> Float[np.ndarray, "B n"]:
    """How often each of ``n`` rows is drawn in each resample (``np.bincount`` per row, batched)."""
    idx = np.asarray(idx)
    b = idx.shape[0]
    flat = (idx + n * np.arange(b)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)


def pca_resampled(
    x: Float[np.ndarray, "n D"], idx: Int[np.ndarray, "B m"], k: int = 1
) -> tuple[Float[np.ndarray, " B"], Float[np.ndarray, "B k D"]]:
    """PC1 share of the standardised spectrum and the top-``k`` unit loadings (full D coordinates, 0 on
    columns constant in that resample; signs arbitrary) of ``x[idx[b]]`` for every resample b (module
    docs). NaN share and loadings where a resample has no variance. ``idx = identity_indices(n)`` gives
    the estimate of the data themselves: ValueManifold's PC1 ratio and components."""
    import scipy.linalg
    import scipy.stats

    x = np.asarray(x, dtype=np.float64)
    idx = np.asarray(idx)
    n, d = x.shape
    b_all, m = idx.shape
    k = max(1, min(int(k), d))
    share = np.full(b_all, np.nan)
    loads = np.full((b_all, k, d), np.nan)
    if b_all == 0:
        return share, loads
    counts = resample_counts(idx, n)
    occurs = counts > 0
    distinct = occurs.sum(axis=1)
    order = np.argsort(~occurs, axis=1, kind="stable")  # each resample's distinct rows first
    r = int(distinct.max())
    step = int(np.clip(_CHUNK_BYTES // (8 * r * d), 1, b_all))
    buf = np.empty(step * r * d)  # one chunk's standardised rows, reused
    lapack = scipy.linalg.get_lapack_funcs("syevr", (x,))
    with quiet(), one_blas_thread():
        for lo in range(0, b_all, step):
            check_stop()
            sl = slice(lo, min(lo + step, b_all))
            z, c = _standardised(x, counts[sl], order[sl, : int(distinct[sl].max())], m, buf)
            for j, b in enumerate(range(sl.start, sl.stop)):
                _top_pairs(z[j, : distinct[b]], np.sqrt(c[j, : distinct[b]]), k, lapack, share[b : b + 1], loads[b])
    return share, loads


def _standardised(
    x: np.ndarray, counts: np.ndarray, rows: np.ndarray, m: int, buf: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A chunk of resamples standardised at once: ``z[j, i] = (x[rows[j, i]] − mean_j) / sd_j`` (weighted
    by the counts ``c[j, i]``; 0 on columns constant in resample j; written into ``buf``) and ``c``. Each
    resample's distinct rows come first; the padding after them (weight 0) is never read."""
    b, r, d = *rows.shape, x.shape[1]
    c = np.take_along_axis(counts, rows, axis=1)
    z = buf[: b * r * d].reshape(b, r, d)
    np.take(x, rows, axis=0, out=z, mode="clip")  # mode="raise" would buffer a copy
    mean = counts @ x / m
    z -= mean[:, None, :]  # centred before squaring: no cancellation in the variance
    sd = np.sqrt(np.einsum("br,brd,brd->bd", c, z, z) / m)
    live = sd > _LIVE * np.maximum(1.0, np.abs(mean))
    z *= np.divide(1.0, sd, out=np.zeros_like(sd), where=live)[:, None, :]
    return z, c


def _top_pairs(z: np.ndarray, rc: np.ndarray, k: int, lapack: Any, share: np.ndarray, loads: np.ndarray) -> None:
    """PC1 share and top-k loadings of one resample's standardised distinct rows ``z`` weighted by
    ``rc = √c``: the top eigenpairs (LAPACK dsyevr, index subset) of the smaller Gram matrix,
    ``(√c z)(√c z)ᵀ`` or ``(√c z)ᵀ(√c z)``; written into ``share[0]`` and ``loads[:kk]``."""
    small = len(z) <= z.shape[1]
    if small:  # the √c weights go on the small matrix, not on z
        g = z @ z.T
        g *= rc[:, None] * rc[None, :]
    else:
        y = z * rc[:, None]
        g = y.T @ y
    size, tot = g.shape[0], float(np.trace(g))
    kk = min(k, len(z))
    if not tot > 0:
        return  # no variance in this resample: no spectrum
    lam, vec, info = _syevr(lapack, g, size - kk + 1, size)
    if info != 0:
        return
    vec = vec[:, ::-1].T
    if small:  # loadings zᵀ(√c u) / ‖·‖
        vec = (vec * rc) @ z
        vec /= np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), np.finfo(float).tiny)
    share[0] = max(lam[-1], 0.0) / tot
    loads[:kk] = vec


def _syevr(lapack: Any, g: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Eigenvalues lo..hi (1-based, ascending) and their vectors of the symmetric ``g`` (LAPACK dsyevr)."""
    w, z, _, _, info = lapack(g, range="I", il=lo, iu=hi, compute_v=1, lower=1, overwrite_a=1)
    return w[: hi - lo + 1], z[:, : hi - lo + 1], info


def cka_resampled(
    x: Float[np.ndarray, "n d1"], y: Float[np.ndarray, "n d2"], idx: Int[np.ndarray, "B m"]
) -> Float[np.ndarray, " B"]:
    """Linear CKA of ``(x[idx[b]], y[idx[b]])`` for every resample b: the numbers of
    ``geoprobe.analysis.tracking.linear_cka_resampled``, from the two n × n Gram matrices and the resamples'
    counts w alone. With weighted centring (a = Kw/m, α = wᵀKw/m², m = Σw) the resample's
    ``⟨K̃, L̃⟩ = Σ_ij w_i w_j K̃_ij L̃_ij`` expands into products of (B, n) count rows with K∘L, K and L,
    so no (B, m, m) Gram matrix is gathered (about 20× faster at n = 75)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    idx = np.asarray(idx)
    x, y = x - x.mean(axis=0), y - y.mean(axis=0)  # a shift of every row changes no resample's CKA
    k, g = x @ x.T, y @ y.T
    w = resample_counts(idx, x.shape[0])
    m = float(idx.shape[1])
    kw, gw = w @ k, w @ g
    a, b = kw / m, gw / m
    alpha, beta = np.einsum("bn,bn->b", kw, w) / m**2, np.einsum("bn,bn->b", gw, w) / m**2
    wa, wb = np.einsum("bn,bn->b", w, a), np.einsum("bn,bn->b", w, b)

    def inner(kl: np.ndarray, ka: np.ndarray, la: np.ndarray, a_: np.ndarray, b_: np.ndarray, al, be, wa_, wb_):
        """Σ_ij w_i w_j K̃_ij L̃_ij of each resample."""
        return (
            np.einsum("bn,bn->b", w @ kl, w)
            - 2 * np.einsum("bn,bn->b", w * b_, ka)
            + be * np.einsum("bn,bn->b", w, ka)
            - 2 * np.einsum("bn,bn->b", w * a_, la)
            + al * np.einsum("bn,bn->b", w, la)
            + 2 * m * np.einsum("bn,bn->b", w, a_ * b_)
            + 2 * wa_ * wb_
            - 2 * m * be * wa_
            - 2 * m * al * wb_
            + al * be * m**2
        )

    num = inner(k * g, kw, gw, a, b, alpha, beta, wa, wb)
    nx = inner(k * k, kw, kw, a, a, alpha, alpha, wa, wa)
    ny = inner(g * g, gw, gw, b, b, beta, beta, wb, wb)
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (nx > 0) & (ny > 0)
        return np.where(ok, num / np.sqrt(np.where(ok, nx * ny, 1.0)), np.nan)


def axis_angles(u: Float[np.ndarray, "... D"], v: Float[np.ndarray, "... D"]) -> Float[np.ndarray, "..."]:
    """Degrees in [0, 90] between unit axes (signs ignored), batched: ``arccos |u · v|``."""
    c = np.abs(np.einsum("...d,...d->...", u, v))
    return np.degrees(np.arccos(np.clip(c, 0.0, 1.0)))


def subspace_angles_batched(a: Float[np.ndarray, "B k D"], b: Float[np.ndarray, "B k D"]) -> Float[np.ndarray, "B k"]:
    """Principal angles (degrees, ascending) between the row spaces of orthonormal bases a[i] and b[i]:
    the arccos of the singular values of a bᵀ (as ``scipy.linalg.subspace_angles`` for orthonormal bases;
    ``geoprobe.analysis.tracking.principal_angles`` is the one-pair reference)."""
    s = np.linalg.svd(a @ np.swapaxes(b, -1, -2), compute_uv=False)
    return np.degrees(np.arccos(np.clip(s, 0.0, 1.0)))


def spearman_resampled(
    x: Float[np.ndarray, "... n"], y: Float[np.ndarray, " n"], idx: Int[np.ndarray, "B m"]
) -> Float[np.ndarray, "... B"]:
    """Spearman ρ of ``(x[..., idx[b]], y[idx[b]])`` for every resample b: the Pearson correlation of the
    ``scipy.stats.rankdata`` ranks (ties averaged), as :func:`geoprobe.analysis.alignment.spearman`, with
    ``y``'s ranks made once per resample for every row of ``x`` and no p-value computed (scipy's pearsonr
    spends a third of its time on one). NaN where either side is constant."""
    import scipy.linalg
    import scipy.stats

    x, y, idx = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64), np.asarray(idx)
    rx = scipy.stats.rankdata(x[..., idx], axis=-1)
    ry = scipy.stats.rankdata(y[idx], axis=-1)
    rx -= rx.mean(axis=-1, keepdims=True)
    ry -= ry.mean(axis=-1, keepdims=True)
    num = np.einsum("...bn,bn->...b", rx, ry)
    den = np.sqrt(np.einsum("...bn,...bn->...b", rx, rx) * np.einsum("bn,bn->b", ry, ry))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def mean_resampled(x: Float[np.ndarray, "... n"], idx: Int[np.ndarray, "B m"]) -> Float[np.ndarray, "... B"]:
    """The mean of ``x[..., idx[b]]`` for every resample b (through the counts: no (…, B, n) copy)."""
    x = np.asarray(x, dtype=np.float64)
    idx = np.asarray(idx)
    return x @ resample_counts(idx, x.shape[-1]).T / idx.shape[1]


def reduction_resampled(
    first: Float[np.ndarray, " n"], last: Float[np.ndarray, " n"], idx: Int[np.ndarray, "B m"]
) -> Float[np.ndarray, " B"]:
    """The focusing reduction ``100 (1 − mean(last) / mean(first))`` % of every resample."""
    means = mean_resampled(np.stack([first, last]), idx)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * (1.0 - means[1] / means[0])


# -- intervals and p-values -------------------------------------------------------------------
def percentile_interval(
    draws: Float[np.ndarray, "... B"], confidence: float = 0.95
) -> tuple[Float[np.ndarray, "..."], Float[np.ndarray, "..."]]:
    """The central ``confidence`` percentile interval of the draws (NaN draws left out; NaN where none)."""
    tail = (1.0 - confidence) / 2.0
    with quiet():
        lo, hi = np.nanquantile(np.asarray(draws, dtype=np.float64), [tail, 1.0 - tail], axis=-1)
    return lo, hi


def _se(draws: np.ndarray) -> np.ndarray:
    """The draws' standard deviation, 0 where it is rounding (below 1e-12 × the draws' magnitude)."""
    with quiet():
        sd = np.nanstd(draws, axis=-1, ddof=1)
        scale = np.maximum(1.0, np.nanmax(np.abs(draws), axis=-1))
    return np.where(sd > 1e-12 * scale, sd, np.where(np.isnan(sd), np.nan, 0.0))


def bootstrap_p(estimate: Float[np.ndarray, "..."], draws: Float[np.ndarray, "... B"]) -> Float[np.ndarray, "..."]:
    """Two-sided p-value of ``estimate = 0`` from its bootstrap SE: ``2 Φ(−|θ̂| / SE*)``. An estimate of
    exactly 0 with SE* 0 (two identical cells) has p = 1; a nonzero one with SE* 0 (nothing to resample)
    or an undefined one has NaN."""
    import scipy.linalg
    import scipy.stats

    est = np.asarray(estimate, dtype=np.float64)
    se = _se(np.asarray(draws, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2.0 * scipy.stats.norm.sf(np.abs(est) / se)
    p = np.where((se == 0) & (est == 0), 1.0, np.where(se > 0, p, np.nan))
    return np.where(np.isfinite(est), p, np.nan)


def holm(p: Float[np.ndarray, " m"]) -> Float[np.ndarray, " m"]:
    """Holm's step-down adjusted p-values over the finite entries (NaN stays NaN and is no test):
    sorted ascending, ``p_(i) · (m − i + 1)``, made monotone, capped at 1."""
    p = np.asarray(p, dtype=np.float64).ravel()
    out = np.full(p.shape, np.nan)
    live = np.flatnonzero(np.isfinite(p))
    m = live.size
    if m == 0:
        return out
    order = live[np.argsort(p[live], kind="stable")]
    adj = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out[order] = np.minimum(1.0, adj)
    return out


def max_t_interval(
    estimate: Float[np.ndarray, " m"], draws: Float[np.ndarray, "m B"], confidence: float = 0.95
) -> tuple[Float[np.ndarray, " m"], Float[np.ndarray, " m"], float]:
    """Simultaneous intervals over the family of ``m`` estimates by the max-|t| bootstrap (module docs):
    (low, high, c). Members with SE* 0 or NaN get the degenerate interval [θ̂, θ̂] and take no part in
    the maximum; c is NaN when no member has a spread."""
    est = np.asarray(estimate, dtype=np.float64).ravel()
    dr = np.asarray(draws, dtype=np.float64).reshape(est.size, -1)
    se = _se(dr)
    live = np.isfinite(est) & (se > 0)
    if not live.any():
        return est.copy(), est.copy(), math.nan
    with quiet():
        t = np.abs(dr[live] - np.nanmean(dr[live], axis=-1, keepdims=True)) / se[live, None]
        crit = float(np.nanquantile(np.nanmax(t, axis=0), confidence))
    half = np.where(live, crit * np.where(live, se, 0.0), 0.0)
    return est - half, est + half, crit


# -- along the checkpoints ----------------------------------------------------------------------
def first_sustained(flags: Bool[np.ndarray, "... T"]) -> Int[np.ndarray, "..."]:
    """The first index t from which ``flags[..., t:]`` are all True (−1 when the last is False)."""
    f = np.asarray(flags, dtype=bool)
    tail = np.flip(np.logical_and.accumulate(np.flip(f, -1), axis=-1), -1)  # all True from t on
    t = f.shape[-1]
    first = t - tail.sum(axis=-1)
    return np.where(first < t, first, -1)


def first_reaching(values: Float[np.ndarray, "... T"], level: float) -> Int[np.ndarray, "..."]:
    """The first index t with ``values[..., t] >= level`` (−1 where none does; NaN never does)."""
    v = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        hit = v >= level
    return np.where(hit.any(axis=-1), hit.argmax(axis=-1), -1)


def progress_fraction(m: Float[np.ndarray, "... T"]) -> Float[np.ndarray, "... T"]:
    """``(m(t) − m(0)) / (m(final) − m(0))`` along the last axis; NaN where m(final) = m(0)."""
    m = np.asarray(m, dtype=np.float64)
    span = m[..., -1:] - m[..., :1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(span != 0, (m - m[..., :1]) / span, np.nan)


# -- runs, then prompts -----------------------------------------------------------------------
def hierarchical_indices(
    runs: int, n: int, n_resamples: int, random_state: RandomState = 0
) -> tuple[Int[np.ndarray, "B R"], Int[np.ndarray, "B n"]]:
    """A two-level bootstrap: each resample draws ``runs`` training runs with replacement, then the
    shared prompts (the same prompt draw for every run and checkpoint of that resample)."""
    g_runs, g_prompts = np.random.default_rng(random_state).spawn(2)
    return g_runs.integers(0, runs, size=(n_resamples, runs)), resample_indices(n, n_resamples, g_prompts)


def pool_runs(draws: Float[np.ndarray, "R ... B"], run_idx: Int[np.ndarray, "B R"]) -> Float[np.ndarray, "... B"]:
    """The mean over each resample's drawn runs of the per-run draws: ``mean_r draws[run_idx[b, r], ..., b]``."""
    d = np.asarray(draws, dtype=np.float64)
    r = d.shape[0]
    counts = resample_counts(np.asarray(run_idx), r)  # (B, R)
    return np.einsum("r...b,br->...b", d, counts) / run_idx.shape[1]
