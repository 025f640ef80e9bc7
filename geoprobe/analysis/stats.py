"""Statistics shared by the analyses: estimates with CIs, bootstrap, permutation tests, Bonferroni,
PCA spectra of standardised data, and matched nulls for them.

Definitions (x is an n × D matrix: n prompts, D features):

* standardisation: every column is centred and divided by its standard deviation over the n
  rows, ``z_ij = (x_ij - mean_j) / sd_j``; columns that are exactly constant (``max == min``)
  are dropped, so D_kept ≤ D columns remain.
* spectrum: the eigenvalues λ_1 ≥ … ≥ λ_k (k = min(n - 1, D_kept)) of the covariance of z,
  as explained-variance ratios ``r_i = λ_i / Σ_j λ_j`` (they sum to 1).
* participation ratio: ``PR = (Σ λ_i)² / Σ λ_i² = 1 / Σ r_i²`` (1 for one direction, k for an
  isotropic spectrum).

Resampled spectra (bootstraps, nulls) come from the smaller Gram matrix G (``z zᵀ`` when
n ≤ D_kept, else ``zᵀ z``), which has the covariance's non-zero eigenvalues: only its two
largest eigenvalues are computed (LAPACK dsyevr, index subset), and PR uses Σλ = tr G and
Σλ² = ‖G‖²_F, so no full eigendecomposition or PCA object is needed per draw.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

import numpy as np
from jaxtyping import Bool, Float

from geoprobe.analysis.workers import check_stop, worker_pool
from geoprobe.serial import Record

RandomState = int | np.random.Generator | None
_CHUNK_ELEMENTS = 4_000_000  # float64 elements per resampled batch (32 MB)


# -- small helpers shared by the analysis modules --------------------------------------------
class quiet(warnings.catch_warnings):
    """Silence scipy's degenerate/constant-input warnings (and numpy's 0/0) inside a block."""

    def __enter__(self) -> Any:
        import scipy.linalg
        import scipy.stats

        out = super().__enter__()
        for category in (scipy.stats.DegenerateDataWarning, scipy.stats.ConstantInputWarning, RuntimeWarning):
            warnings.simplefilter("ignore", category)
        return out


# -- Estimate --------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Estimate(Record):
    """A point estimate with a confidence interval ``[low, high]`` at level ``confidence``.

    ``low <= high`` always holds; ``low <= value <= high`` need not (BCa edge cases). NaN marks
    an undefined quantity (stored as null). Two estimates are equal when their ``to_dict()`` are
    (NaN == NaN)."""

    value: float
    low: float
    high: float
    confidence: float = 0.95

    def __post_init__(self) -> None:
        for name in ("value", "low", "high", "confidence"):
            object.__setattr__(self, name, float(getattr(self, name)))
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence {self.confidence} must be in (0, 1)")
        if self.low > self.high:  # False when either is NaN
            raise ValueError(f"interval low {self.low} > high {self.high}")

    def __format__(self, spec: str) -> str:
        """``f"{e:.3f}"`` → ``"0.123 [0.100, 0.150]"``: the value and its interval in one format
        (default ``.3f``); ``"n/a"`` for an undefined value, the value alone when the interval is; never a
        ``-0.000`` (geoprobe.text.number)."""
        from geoprobe.text import number

        spec = spec or ".3f"
        if not math.isfinite(self.value):
            return "n/a"
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return number(self.value, spec)
        return f"{number(self.value, spec)} [{number(self.low, spec)}, {number(self.high, spec)}]"


def one_blas_thread() -> Any:
    """One BLAS thread for the block: many small (n × d)(d × n) products, or layers already run in
    parallel threads, are fastest without BLAS threading (OpenBLAS's threaded path was up to 10×
    slower on 90 products of 160 × 64 under load: 0.3–1.2 s vs 0.1 s). threadpoolctl ships with
    scikit-learn."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn (a dependency) requires it
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def t_interval(values: Float[np.ndarray, " n"], confidence: float = 0.95) -> Estimate:
    """The mean of a few independent repeats (seeds) with its Student-t interval, n − 1 degrees of
    freedom (NaN interval for one value)."""
    import scipy.linalg
    import scipy.stats

    a = np.asarray(values, dtype=np.float64)
    m = float(a.mean())
    if a.size < 2:
        return Estimate(m, math.nan, math.nan, confidence)
    half = float(scipy.stats.t.ppf((1 + confidence) / 2, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size))
    return Estimate(m, m - half, m + half, confidence)


def se_interval(value: float, se: float, confidence: float, lo: float, hi: float) -> Estimate:
    """The normal-approximation interval ``value ± z·se`` clipped to ``[lo, hi]`` (NaN when undefined)."""
    import scipy.linalg
    import scipy.stats

    if not (math.isfinite(value) and math.isfinite(se)):
        return Estimate(value, math.nan, math.nan, confidence)
    half = float(scipy.stats.norm.ppf((1 + confidence) / 2)) * se
    return Estimate(value, max(lo, value - half), min(hi, value + half), confidence)


# -- bootstrap and permutation tests ---------------------------------------------------------
def _as_samples(data: Any) -> tuple[np.ndarray, ...]:
    samples = data if isinstance(data, tuple) else (data,)
    out = tuple(np.asarray(s, dtype=np.float64) for s in samples)
    if not out or any(s.ndim == 0 for s in out):
        raise ValueError("data must be an array of samples, or a tuple of them")
    return out


def bootstrap_batch(
    samples: tuple[np.ndarray, ...],
    statistic: Callable[..., Any],
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    method: str = "BCa",
    random_state: RandomState = None,
    paired: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``scipy.stats.bootstrap`` over the LAST axis of every sample; leading axes are a batch.

    Returns (value, low, high) arrays of the batch shape. Batch elements with fewer than 2
    observations or with every sample constant get the degenerate interval (value, value,
    value); a NaN statistic gets NaN bounds; a failed BCa interval (degenerate bootstrap
    distribution) falls back to the percentile interval of the same resamples."""
    import scipy.linalg
    import scipy.stats

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence} must be in (0, 1)")
    if method not in ("BCa", "percentile", "basic"):
        raise ValueError(f"method {method!r} is not BCa|percentile|basic")
    n = samples[0].shape[-1]
    if paired and any(s.shape[-1] != n for s in samples):
        raise ValueError(f"paired samples differ in length: {[s.shape[-1] for s in samples]}")
    with quiet():
        value = np.asarray(statistic(*samples, axis=-1), dtype=np.float64)
    constant = np.ones(value.shape, dtype=bool)
    for s in samples:
        constant &= np.broadcast_to(np.ptp(s, axis=-1) == 0 if s.shape[-1] else True, value.shape)
    low, high = value.copy(), value.copy()
    todo = ~constant & np.isfinite(value)
    if n >= 2 and todo.any():
        rng = np.random.default_rng(random_state)
        kw = dict(vectorized=True, paired=paired and len(samples) > 1, axis=-1, confidence_level=confidence)
        # scipy resamples (and, for BCa, jackknifes) `batch` draws at a time: memory stays near 32 MB
        # whatever n_resamples and n; the draws and the numbers are the same as in one batch
        kw["batch"] = chunk_size(1, sum(s.size for s in samples))
        with quiet():
            res = scipy.stats.bootstrap(samples, statistic, n_resamples=n_resamples, method=method, rng=rng, **kw)
            lo, hi = (
                np.asarray(res.confidence_interval.low, dtype=np.float64),
                np.asarray(res.confidence_interval.high, dtype=np.float64),
            )
            failed = todo & ~(np.isfinite(lo) & np.isfinite(hi))
            if failed.any() and method != "percentile":
                pct = scipy.stats.bootstrap(
                    samples, statistic, n_resamples=0, method="percentile", bootstrap_result=res, rng=rng, **kw
                ).confidence_interval
                lo = np.where(failed, pct.low, lo)
                hi = np.where(failed, pct.high, hi)
        low, high = np.where(todo, np.fmin(lo, hi), low), np.where(todo, np.fmax(lo, hi), high)
    low[~np.isfinite(value)] = np.nan
    high[~np.isfinite(value)] = np.nan
    return value, low, high


def bootstrap_ci(
    data: Float[np.ndarray, "n ..."] | tuple[Float[np.ndarray, "n ..."], ...],
    statistic: Callable[..., Any] = np.mean,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    method: Literal["BCa", "percentile", "basic"] = "BCa",
    random_state: RandomState = None,
    paired: bool = True,
) -> Estimate:
    """Bootstrap CI over the first axis (prompts) with ``scipy.stats.bootstrap``.

    ``statistic(*samples, axis=-1)`` must be vectorised like scipy's (``np.mean`` is) and give
    one number per sample set. ``data`` may be a tuple of arrays: with ``paired`` (default)
    they are resampled together (same prompts). n < 2 or constant data gives the degenerate
    interval ``Estimate(v, v, v)`` without warnings."""
    samples = tuple(np.moveaxis(s, 0, -1) for s in _as_samples(data))
    value, low, high = bootstrap_batch(
        samples,
        statistic,
        confidence=confidence,
        n_resamples=n_resamples,
        method=method,
        random_state=random_state,
        paired=paired,
    )
    if value.shape != ():
        raise ValueError(f"statistic gave shape {value.shape}, not one number; reduce every axis but prompts first")
    return Estimate(float(value), float(low), float(high), confidence)


def permutation_pvalue(
    data: Float[np.ndarray, "... n"] | tuple[Float[np.ndarray, "... n"], ...],
    statistic: Callable[..., Any],
    *,
    permutation_type: Literal["independent", "samples", "pairings"] = "independent",
    alternative: Literal["two-sided", "less", "greater"] = "two-sided",
    n_resamples: int = 1000,
    random_state: RandomState = None,
    axis: int = 0,
) -> float | Float[np.ndarray, "..."]:
    """p-value of ``scipy.stats.permutation_test`` (vectorised statistic, ``axis`` = samples axis).

    Returns a float for a scalar statistic, else an array over the batch axes. A NaN observed
    statistic (e.g. a correlation with a constant variable) gives NaN, never a small p."""
    import scipy.linalg
    import scipy.stats

    samples = _as_samples(data)
    with quiet():
        observed = np.asarray(statistic(*samples, axis=axis), dtype=np.float64)
        res = scipy.stats.permutation_test(
            samples,
            statistic,
            permutation_type=permutation_type,
            vectorized=True,
            n_resamples=n_resamples,
            alternative=alternative,
            axis=axis,
            rng=np.random.default_rng(random_state),
            batch=chunk_size(1, sum(s.size for s in samples)),  # memory near 32 MB; the same draws
        )
    p = np.where(np.isfinite(observed), np.asarray(res.pvalue, dtype=np.float64), np.nan)
    return float(p) if p.shape == () else p


def bonferroni(p: Float[np.ndarray, " m"] | Sequence[float], m: int | None = None) -> Float[np.ndarray, " m"]:
    """Bonferroni-adjusted p-values ``min(1, p · m)``; ``m`` defaults to ``len(p)``; NaN stays NaN."""
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    m = p.size if m is None else int(m)
    if m < 1 or m < p.size:
        raise ValueError(f"m={m} tests but {p.size} p-values; m must be >= len(p) >= 1")
    if np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    return np.minimum(1.0, p * m)


# -- PCA spectra -----------------------------------------------------------------------------
def constant_columns(x: Float[np.ndarray, "... n D"]) -> Bool[np.ndarray, "... D"]:
    """Columns whose values are all exactly equal over the rows (axis -2)."""
    return np.ptp(x, axis=-2) == 0


def zscore(x: Float[np.ndarray, "... n D"], scale: bool = True) -> Float[np.ndarray, "... n D"]:
    """Centre each column over the rows (axis -2) and, with ``scale``, divide it by its standard
    deviation (ddof 0). Constant columns become 0 (dropped from every spectrum)."""
    xc = x - x.mean(axis=-2, keepdims=True)
    live = ~constant_columns(x)[..., None, :]
    if not scale:
        return np.where(live, xc, 0.0)
    sd = np.sqrt(np.einsum("...ij,...ij->...j", xc, xc)[..., None, :] / x.shape[-2])
    inv = np.divide(1.0, sd, out=np.zeros_like(sd), where=live & (sd > 0))
    return xc * inv


def gram_eigenvalues(z: Float[np.ndarray, "... n D"]) -> Float[np.ndarray, "... m"]:
    """Eigenvalues (descending, clipped at 0) of ``z zᵀ`` or ``zᵀ z``, whichever is smaller."""
    zt = np.swapaxes(z, -1, -2)
    g = z @ zt if z.shape[-2] <= z.shape[-1] else zt @ z
    return np.clip(np.linalg.eigvalsh(g)[..., ::-1], 0.0, None)


def _top2(g: np.ndarray) -> np.ndarray:
    """The two largest eigenvalues (descending) of each symmetric matrix in the batch ``g``.
    LAPACK's dsyevr with an index subset: about twice as fast as all eigenvalues at m = 160."""
    import scipy.linalg
    import scipy.stats

    m = g.shape[-1]
    flat = g.reshape(-1, m, m)
    if m < 3:
        w = np.linalg.eigvalsh(flat)[:, ::-1]
        w = np.concatenate([w, np.zeros((len(flat), 2 - w.shape[1]))], axis=1) if m < 2 else w[:, :2]
    else:
        w = np.stack(
            [
                scipy.linalg.eigh(
                    a, eigvals_only=True, subset_by_index=[m - 2, m - 1], driver="evr", check_finite=False
                )[::-1]
                for a in flat
            ]
        )
    return np.clip(w, 0.0, None).reshape(g.shape[:-2] + (2,))


def spectrum_summary(z: Float[np.ndarray, "... n D"]) -> Float[np.ndarray, "3 ..."]:
    """(PC1, PC1+PC2, PR) of already standardised data, batched over leading axes; NaN when
    there is no variance. Only the top two eigenvalues are computed: Σλ = tr G and
    Σλ² = ‖G‖²_F for the Gram matrix G (the smaller of z zᵀ and zᵀ z)."""
    zt = np.swapaxes(z, -1, -2)
    g = z @ zt if z.shape[-2] <= z.shape[-1] else zt @ z
    tot = np.trace(g, axis1=-2, axis2=-1)
    fro2 = np.einsum("...ij,...ij->...", g, g)
    w = _top2(g)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.stack([w[..., 0] / tot, (w[..., 0] + w[..., 1]) / tot, tot**2 / fro2])


def spectrum(x: Float[np.ndarray, "n D"], standardize: bool = True) -> Float[np.ndarray, " k"]:
    """Explained-variance ratios (descending, float64, sum 1) of the PCA of ``x``: columns
    centred (and z-scored with ``standardize``), constant columns dropped;
    k = min(n - 1, D_kept). Empty when there is no variance (n < 2 or all columns constant)."""
    x = as_matrix(x)
    kept = ~constant_columns(x)
    k = min(x.shape[0] - 1, int(kept.sum()))
    if k < 1:
        return np.zeros(0)
    w = gram_eigenvalues(zscore(x[:, kept], scale=standardize))[:k]
    return w / w.sum()


def participation_ratio(ratios: Float[np.ndarray, " k"] | Sequence[float]) -> float:
    """``(Σ λ)² / Σ λ²`` of eigenvalues or explained-variance ratios (``1 / Σ r²`` for ratios);
    NaN for an empty or all-zero spectrum."""
    lam = np.asarray(ratios, dtype=np.float64).reshape(-1)
    if np.any(lam < 0):
        raise ValueError("eigenvalues / ratios must be >= 0")
    ss = float(np.sum(lam**2))
    return float(np.sum(lam) ** 2 / ss) if ss > 0 else math.nan


def as_matrix(x: Float[np.ndarray, "n D"] | Sequence[Sequence[float]]) -> Float[np.ndarray, "n D"]:
    """``x`` as a finite float64 n × D matrix (a one-line ValueError otherwise)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"expected an n × D matrix, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("the data contain NaN or Inf")
    return x


def chunk_size(n: int, d: int) -> int:
    """Resamples per batch so a (B, n, d) float64 stack stays near 32 MB."""
    return max(1, _CHUNK_ELEMENTS // max(1, n * d))


# -- matched nulls ---------------------------------------------------------------------------
NullKind = Literal["permute", "gaussian"]


@dataclass(frozen=True, eq=False)
class NullBand(Record):
    """PC1, PC1+PC2 and PR of ``draws`` structureless data sets of the data's size n × d
    (d = non-constant columns), standardised like the data. Each Estimate's value is the mean
    over draws; low/high are the (1 ± confidence)/2 percentiles (2.5 / 97.5 % by default)."""

    kind: NullKind
    n: int
    d: int
    draws: int
    pc1: Estimate
    pc12: Estimate
    pr: Estimate

    def __post_init__(self) -> None:
        if self.kind not in ("permute", "gaussian"):
            raise ValueError(f"null kind {self.kind!r} is not permute|gaussian")
        if self.n < 1 or self.d < 0 or self.draws < 1:
            raise ValueError(f"null of n={self.n}, d={self.d}, draws={self.draws}: need n >= 1, d >= 0, draws >= 1")
        for name in ("pc1", "pc12"):
            e = getattr(self, name)
            if any(v < 0 or v > 1 + 1e-9 for v in (e.value, e.low, e.high)):
                raise ValueError(f"null {name} {e} is not a fraction in [0, 1]")
        if any(v < 1 - 1e-9 for v in (self.pr.value, self.pr.low, self.pr.high)):
            raise ValueError(f"null participation ratio {self.pr} is below 1")


def matched_null(
    x: Float[np.ndarray, "n D"] | None,
    n: int | None = None,
    d: int | None = None,
    kind: NullKind = "permute",
    draws: int = 200,
    random_state: RandomState = None,
    confidence: float = 0.95,
) -> NullBand:
    """Distribution of (PC1, PC1+PC2, PR) when there is no shared structure, at the data's n × d.

    * ``"permute"``: every column of ``x`` is permuted independently across the rows, which
      destroys the covariance between columns but keeps each column's values. Standardising
      commutes with permuting rows, so the permuted standardised data are standardised.
    * ``"gaussian"``: iid N(0, 1) entries, n × d (d = non-constant columns of ``x`` if given),
      each draw standardised like the data.

    Why not "≈ 5 % random PC1": PC1 of structureless data is not 1/d when n is not ≫ d. The
    covariance of n points has rank n - 1, and its top eigenvalue sits at the Marchenko–Pastur
    edge, so PC1 of noise ≈ (1/√n + 1/√d)², tending to 1/(n - 1) when n ≪ d: n = 20 prompts
    and d = 200 features give PC1 ≈ 9 % from noise alone, n = 160 and d = 192 about 2 %.
    """
    if kind not in ("permute", "gaussian"):
        raise ValueError(f"null kind {kind!r} is not permute|gaussian")
    if draws < 1:
        raise ValueError(f"draws={draws} must be >= 1")
    if x is not None:
        x = as_matrix(x)
        if (n is not None and n != x.shape[0]) or (d is not None and d != x.shape[1]):
            raise ValueError(f"n={n}, d={d} do not match the data's shape {x.shape}")
        n = x.shape[0]
        z = zscore(x[:, ~constant_columns(x)])
        d = z.shape[1]
    elif kind == "permute":
        raise ValueError("a permutation null needs the data x")
    elif n is None or d is None or n < 1 or d < 0:
        raise ValueError(f"a gaussian null without data needs n >= 1 and d >= 0, got n={n}, d={d}")
    rng = np.random.default_rng(random_state)
    stats = np.full((3, draws), np.nan)
    if n >= 2 and d >= 1:
        step = min(chunk_size(n, d), -(-draws // 2))  # at least two chunks for the two threads
        starts = list(range(0, draws, step))
        gens = rng.spawn(len(starts))  # one generator per chunk: the same draws however chunks are scheduled
        zt = None if kind == "gaussian" else np.ascontiguousarray(z.T)  # (d, n): each column contiguous

        def chunk(j: int) -> None:
            check_stop()
            start, g = starts[j], gens[j]
            b = min(step, draws - start)
            if zt is not None:
                batch = np.swapaxes(g.permuted(np.broadcast_to(zt, (b, d, n)), axis=-1), -1, -2)
            else:
                # float32 is ample for a null band (ratios to ~1e-6) and halves the cost
                batch = zscore(g.standard_normal((b, n, d), dtype=np.float32))
            stats[:, start : start + b] = spectrum_summary(batch)

        if len(starts) > 1:
            with worker_pool(2) as pool:  # LAPACK/BLAS release the GIL
                list(pool.map(chunk, range(len(starts))))
        else:
            chunk(0)
    return NullBand(kind, int(n), int(d), draws, *(_band(s, confidence) for s in stats))


def _band(s: np.ndarray, confidence: float) -> Estimate:
    if not np.all(np.isfinite(s)):
        return Estimate(math.nan, math.nan, math.nan, confidence)
    lo, hi = np.quantile(s, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Estimate(float(np.mean(s)), float(lo), float(hi), confidence)
