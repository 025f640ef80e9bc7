"""Two sets of value vectors compared (arXiv 2512.23752 §5.1, Table 1): does restricting the
prompts to one domain (only mathematics, only code, ...) collapse the final-layer value manifold?

Every set of prompts gets the value-manifold statistics of ``geoprobe.analysis.manifold``
(columns z-scored over that set's prompts, constant columns dropped, PCA spectrum → PC1,
PC1+PC2, PR = 1/Σr²) with the bootstrap standard-error interval and a matched Gaussian null
(``stats.matched_null``) of the set's own n × d. Two sets are compared by

* the difference Δ = b − a, with the interval Δ ± z_{(1+c)/2} · √(SE_a² + SE_b²): each set is
  bootstrapped on its own (``manifold.spectrum_se``: prompts resampled, every resample
  re-standardised), and for independent resamples the SE of the difference is that root sum
  of squares, so a set's resamples are drawn once and shared by every contrast it enters;
* a two-sided permutation p-value: each set is z-scored on its own (so mean and scale shifts
  of coordinates between domains do not become between-set variance), the rows are pooled,
  split at random into sizes n_a and n_b, each part re-standardised on its own, and
  ``p = (1 + #{|Δ_perm| >= |Δ_obs|}) / (1 + n_permutations)``. Its null is exchangeability
  (about: the same correlation matrix), which is stronger than "the same PC1": sets with equal
  spectra but different leading directions are rejected more often than the nominal level, so
  the interval of Δ, not p, says whether and how much the manifold collapses.

PC1 of standardised data is biased upward when n ≲ D, by an amount that depends on n, so
sets are required to have equal n unless ``allow_unequal=True``.

Random streams: every bootstrap, null and permutation draws from its own generator, derived from
``random_state`` and a key (the set's label, its n × d, or the pair of labels) with
``np.random.SeedSequence(entropy, spawn_key=...)``, so a number does not depend on which or how
many other sets are analysed, and ``contrast(x_mixed, x_math, label_a="mixed", label_b="math")``
reproduces that contrast of ``geoprobe.domains.compare_domains``. The matched controls are
chosen by :mod:`geoprobe.analysis.token_match`.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.manifold import spectrum_se
from geoprobe.analysis.stats import (
    Estimate,
    NullBand,
    RandomState,
    bonferroni,
    chunk_size,
    constant_columns,
    matched_null,
    one_blas_thread,
    quiet,
    se_interval,
    spectrum_summary,
    zscore,
)
from geoprobe.analysis.workers import check_stop, worker_pool
from geoprobe.serial import Record

METRICS: tuple[str, ...] = ("pc1", "pc12", "pr")
METRIC_LABELS = {"pc1": "PC1", "pc12": "PC1+PC2", "pr": "PR"}


# -- random streams ----------------------------------------------------------------------------
def root_entropy(random_state: RandomState) -> int:
    """The root entropy every keyed stream is derived from."""
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**63))
    if random_state is None:
        return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, (int, np.integer)):
        raise ValueError(f"random_state {random_state!r} must be an int, a numpy Generator or None")
    if random_state < 0:
        raise ValueError(f"random_state {random_state} must be >= 0")
    return int(random_state)


def _key(label: str) -> int:
    return zlib.crc32(label.encode("utf-8"))


def _stream(entropy: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=tuple(int(k) for k in key)))


# -- one set: point values, bootstrap SE, null ----------------------------------------------
@dataclass(frozen=True)
class SetStats:
    label: str
    x: np.ndarray  # (n, D) float64, as given
    values: np.ndarray  # (3,) PC1, PC1+PC2, PR
    se: np.ndarray  # (3,) bootstrap SE
    k: int  # spectrum length min(n - 1, d_kept)
    null: NullBand
    confidence: float

    @property
    def n(self) -> int:
        return self.x.shape[0]

    def estimates(self) -> dict[str, Estimate]:
        hi = (1.0, 1.0, float(self.k))
        lo = (0.0, 0.0, 1.0)
        return {
            m: se_interval(float(self.values[i]), float(self.se[i]), self.confidence, lo[i], hi[i])
            for i, m in enumerate(METRICS)
        }


def value_matrix(x: Float[np.ndarray, "n D"], label: str) -> Float[np.ndarray, "n D"]:
    """``x`` as float64 after checking it is a finite n × D matrix (n >= 3) with some variance."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"set {label!r}: expected an n × D matrix of value vectors, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        bad = np.argwhere(~np.isfinite(x))[0]
        raise ValueError(f"set {label!r} contains NaN/Inf (prompt {bad[0]}, coordinate {bad[1]})")
    if x.shape[0] < 3:
        raise ValueError(f"set {label!r} has {x.shape[0]} prompts; PC1+PC2 with a bootstrap CI needs at least 3")
    if constant_columns(x).all():
        raise ValueError(
            f"set {label!r}: every coordinate is constant over its {x.shape[0]} prompts; "
            "there is no variance to analyse (all final-token value vectors are equal)"
        )
    return x


def set_stats(
    x: np.ndarray,
    label: str,
    entropy: int,
    n_resamples: int,
    null_draws: int,
    confidence: float,
    null_cache: dict[tuple[int, int], NullBand],
) -> SetStats:
    kept = x[:, ~constant_columns(x)]
    n, d = kept.shape
    with quiet():
        values = spectrum_summary(zscore(kept)[None])[:, 0]
    se = spectrum_se(kept, n_resamples, _stream(entropy, 0, _key(label)))
    if (n, d) not in null_cache:  # a Gaussian null depends on n × d only
        null_cache[(n, d)] = matched_null(
            None, n, d, kind="gaussian", draws=null_draws, random_state=_stream(entropy, 1, n, d), confidence=confidence
        )
    return SetStats(label, x, values, se, min(n - 1, d), null_cache[(n, d)], confidence)


def _permutation_diffs(x_a: np.ndarray, x_b: np.ndarray, n_permutations: int, rng: np.random.Generator) -> np.ndarray:
    """(3, n_permutations) differences b − a of (PC1, PC1+PC2, PR) over random re-splits of the
    pooled rows into sizes n_a, n_b; each part z-scored on its own. In float32 (relative error
    ~1e-6, ample for a permutation distribution; about 1.5× faster than float64), chunked and run on two threads like
    ``stats.matched_null`` (one generator per chunk: the same draws however chunks run)."""
    # each set z-scored on its own first: a shift of the mean or scale of a coordinate between
    # the sets is not what PC1 of standardised data measures, but pooled it would become
    # between-set variance inside every permuted half; the observed statistic is unchanged
    pooled = np.concatenate([zscore(x_a), zscore(x_b)]).astype(np.float32)
    n_a, big_n, d = x_a.shape[0], pooled.shape[0], pooled.shape[1]
    out = np.full((3, n_permutations), np.nan)
    step = min(chunk_size(big_n, d), -(-n_permutations // 2))
    starts = list(range(0, n_permutations, step))
    gens = rng.spawn(len(starts))
    ar = np.arange(big_n)

    def chunk(j: int) -> None:
        check_stop()
        start, g = starts[j], gens[j]
        b = min(step, n_permutations - start)
        idx = g.permuted(np.broadcast_to(ar, (b, big_n)), axis=-1)
        sa = spectrum_summary(zscore(pooled[idx[:, :n_a]]))
        sb = spectrum_summary(zscore(pooled[idx[:, n_a:]]))
        out[:, start : start + b] = sb - sa

    with quiet():
        if len(starts) > 1:
            with worker_pool(2) as pool:  # LAPACK/BLAS release the GIL
                list(pool.map(chunk, range(len(starts))))
        else:
            chunk(0)
    return out


def check_sizes(n_a: int, n_b: int, label_a: str, label_b: str, allow_unequal: bool) -> None:
    if n_a != n_b and not allow_unequal:
        raise ValueError(
            f"set {label_a!r} has n = {n_a} prompts and set {label_b!r} has n = {n_b}: PC1 of standardised data "
            "is biased upward by an amount that depends on n when n ≲ D, so the difference would mix that bias "
            f"into the comparison; sample both sets at the same size (e.g. {min(n_a, n_b)} prompts each), "
            "or pass allow_unequal=True and compare each set with its own null band"
        )


def contrast_sets(sa: SetStats, sb: SetStats, entropy: int, n_permutations: int, n_tests: int = 1) -> "DomainContrast":
    conf = sa.confidence
    diffs = _permutation_diffs(sa.x, sb.x, n_permutations, _stream(entropy, 2, _key(sa.label), _key(sb.label)))
    observed = sb.values - sa.values
    diff, p = {}, {}
    for i, m in enumerate(METRICS):
        se = math.hypot(float(sa.se[i]), float(sb.se[i]))
        lo, hi = (-1.0, 1.0) if m != "pr" else (1.0 - sa.k, sb.k - 1.0)
        diff[m] = se_interval(float(observed[i]), se, conf, lo, hi)
        if not math.isfinite(observed[i]) or not np.all(np.isfinite(diffs[i])):
            p[m] = math.nan
        else:
            # ties at float precision: the permuted statistics are float32, so compare with a
            # relative tolerance rather than let rounding decide an exact tie
            tol = 1e-6 * max(1.0, abs(float(observed[i])))
            p[m] = float((1 + np.sum(np.abs(diffs[i]) >= abs(observed[i]) - tol)) / (1 + n_permutations))
    return DomainContrast(
        label_a=sa.label,
        label_b=sb.label,
        n_a=sa.n,
        n_b=sb.n,
        d=sa.x.shape[1],
        a=sa.estimates(),
        b=sb.estimates(),
        diff=diff,
        p_value=p,
        null_a=sa.null,
        null_b=sb.null,
        n_permutations=n_permutations,
        n_tests=n_tests,
    )


def check_counts(n_resamples: int, n_permutations: int, null_draws: int, confidence: float) -> None:
    if n_resamples < 2 or n_permutations < 1 or null_draws < 1:
        raise ValueError(
            f"n_resamples={n_resamples} (>= 2), n_permutations={n_permutations} (>= 1) and "
            f"null_draws={null_draws} (>= 1)"
        )
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence} must be in (0, 1)")


# -- DomainContrast --------------------------------------------------------------------------
def _estimates(d: Mapping[str, Estimate], what: str) -> dict[str, Estimate]:
    if set(d) != set(METRICS) or any(not isinstance(e, Estimate) for e in d.values()):
        raise ValueError(f"{what} must map exactly {METRICS} to Estimates, got {sorted(d)}")
    return {m: d[m] for m in METRICS}


def check_ratio(e: Estimate, what: str, lo: float = 0.0, hi: float = 1.0) -> None:
    if any(v < lo - 1e-9 or v > hi + 1e-9 for v in (e.value, e.low, e.high)):  # NaN passes
        raise ValueError(f"{what} {e} is not in [{lo}, {hi}]")


def _pvalues(d: Mapping[str, float], what: str) -> dict[str, float]:
    if set(d) != set(METRICS):
        raise ValueError(f"{what} must map exactly {METRICS} to p-values, got {sorted(d)}")
    out = {m: float(d[m]) for m in METRICS}
    if any(not (math.isnan(p) or 0.0 < p <= 1.0) for p in out.values()):
        raise ValueError(f"{what} {out} must lie in (0, 1] (or be NaN)")
    return out


@dataclass(frozen=True, eq=False)
class DomainContrast(Record):
    """Set b against set a: each set's PC1, PC1+PC2 and PR (``a``, ``b``), the difference
    ``diff = b − a`` with its bootstrap interval, the two-sided permutation p-value, each
    set's matched Gaussian null band, and the Bonferroni family size ``n_tests`` with the
    adjusted p-values ``p_adjusted = min(1, n_tests · p)`` (derived, not an init argument).
    Equal when their ``to_dict()`` are."""

    label_a: str
    label_b: str
    n_a: int
    n_b: int
    d: int  # coordinates given (heads concatenated), before dropping constant columns
    a: dict[str, Estimate]
    b: dict[str, Estimate]
    diff: dict[str, Estimate]
    p_value: dict[str, float]
    p_adjusted: dict[str, float] = field(init=False)  # stored after p_value, derived from it
    null_a: NullBand
    null_b: NullBand
    n_permutations: int = 1000
    n_tests: int = 1

    def __post_init__(self) -> None:
        for name in ("label_a", "label_b"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be a non-empty string, got {getattr(self, name)!r}")
        if self.label_a == self.label_b:
            raise ValueError(f"the two sets need different labels, both are {self.label_a!r}")
        for name in ("n_a", "n_b", "d", "n_permutations", "n_tests"):
            object.__setattr__(self, name, int(getattr(self, name)))
        if self.n_a < 3 or self.n_b < 3 or self.d < 1:
            raise ValueError(f"n_a={self.n_a}, n_b={self.n_b} (>= 3 each) and d={self.d} (>= 1)")
        if self.n_permutations < 1 or self.n_tests < 1:
            raise ValueError(f"n_permutations={self.n_permutations} and n_tests={self.n_tests} must be >= 1")
        for side in ("a", "b"):
            est = _estimates(getattr(self, side), side)
            check_ratio(est["pc1"], f"{side}.pc1")
            check_ratio(est["pc12"], f"{side}.pc12")
            check_ratio(est["pr"], f"{side}.pr", 1.0, math.inf)
            object.__setattr__(self, side, est)
        diff = _estimates(self.diff, "diff")
        for m in METRICS:
            expect = self.b[m].value - self.a[m].value
            if math.isfinite(expect) and not abs(diff[m].value - expect) <= 1e-9 * max(1.0, abs(expect)):
                raise ValueError(f"diff.{m} = {diff[m].value} is not b − a = {expect}")
        object.__setattr__(self, "diff", diff)
        p = _pvalues(self.p_value, "p_value")
        if any(v < 1.0 / (1 + self.n_permutations) - 1e-12 for v in p.values()):
            raise ValueError(f"p-values {p} below 1/(1 + n_permutations) = 1/{1 + self.n_permutations}")
        object.__setattr__(self, "p_value", p)
        if (
            not isinstance(self.null_a, NullBand)
            or not isinstance(self.null_b, NullBand)
            or self.null_a.n != self.n_a
            or self.null_b.n != self.n_b
        ):
            raise ValueError(f"null bands must be NullBands with n = {self.n_a} and {self.n_b}")
        object.__setattr__(self, "p_adjusted", {m: float(bonferroni([p[m]], self.n_tests)[0]) for m in METRICS})


def contrast(
    x_a: Float[np.ndarray, "n_a D"],
    x_b: Float[np.ndarray, "n_b D"],
    *,
    label_a: str,
    label_b: str,
    n_resamples: int = 1000,
    n_permutations: int = 1000,
    confidence: float = 0.95,
    random_state: RandomState = 0,
    allow_unequal: bool = False,
    null_draws: int = 200,
) -> DomainContrast:
    """Value-manifold statistics of set b against set a (rows: prompts; columns: the final-token
    value coordinates of one layer, heads concatenated; the same D for both).

    Per set: PC1, PC1+PC2 and PR of the z-scored set (manifold.py's definitions), each with the
    bootstrap-SE interval (``n_resamples`` resamples, each re-standardised), and a Gaussian null
    band of the set's n × d_kept (``null_draws`` draws). The difference b − a has the interval
    ``Δ ± z · √(SE_a² + SE_b²)`` and a two-sided permutation p-value (``n_permutations``
    re-splits of the pooled rows, each set z-scored on its own first). Unequal n raises
    ValueError unless ``allow_unequal``. Deterministic for an int ``random_state``; the streams
    are keyed by the labels (see the module docstring)."""
    check_counts(n_resamples, n_permutations, null_draws, confidence)
    if not isinstance(label_a, str) or not isinstance(label_b, str) or not label_a or not label_b or label_a == label_b:
        raise ValueError(f"label_a {label_a!r} and label_b {label_b!r} must be two different non-empty strings")
    x_a, x_b = value_matrix(x_a, label_a), value_matrix(x_b, label_b)
    if x_a.shape[1] != x_b.shape[1]:
        raise ValueError(
            f"set {label_a!r} has D = {x_a.shape[1]} coordinates and set {label_b!r} has "
            f"D = {x_b.shape[1]}; both must come from the same layer of the same model"
        )
    check_sizes(x_a.shape[0], x_b.shape[0], label_a, label_b, allow_unequal)
    entropy = root_entropy(random_state)
    cache: dict[tuple[int, int], NullBand] = {}
    with one_blas_thread():
        sa = set_stats(x_a, label_a, entropy, n_resamples, null_draws, confidence, cache)
        sb = set_stats(x_b, label_b, entropy, n_resamples, null_draws, confidence, cache)
        return contrast_sets(sa, sb, entropy, n_permutations)


def contrast_families(
    values: Mapping[str, Float[np.ndarray, "n D"]],
    families: Sequence[Sequence[tuple[str, str]]],
    *,
    n_resamples: int = 1000,
    n_permutations: int = 1000,
    confidence: float = 0.95,
    random_state: RandomState = 0,
    null_draws: int = 200,
) -> tuple[dict[str, SetStats], list[DomainContrast]]:
    """Every set's statistics and, for each family of (label_a, label_b) pairs, one contrast per
    pair, Bonferroni-adjusted over the family's size. ``values`` are checked matrices
    (:func:`value_matrix`) keyed by label; the streams are keyed by the labels as in :func:`contrast`."""
    entropy = root_entropy(random_state)
    cache: dict[tuple[int, int], NullBand] = {}
    with one_blas_thread():
        stats = {k: set_stats(x, k, entropy, n_resamples, null_draws, confidence, cache) for k, x in values.items()}
        contrasts = [
            contrast_sets(stats[a], stats[b], entropy, n_permutations, n_tests=len(pairs))
            for pairs in families
            for a, b in pairs
        ]
    return stats, contrasts
