"""Domain restriction (arXiv 2512.23752 §5.1, Table 1): does restricting the prompts to one
domain (only mathematics, only code, ...) collapse the final-layer value manifold?

Every set of prompts gets the value-manifold statistics of ``geoprobe.analysis.manifold``
(columns z-scored over that set's prompts, constant columns dropped, PCA spectrum → PC1,
PC1+PC2, PR = 1/Σr²) with the bootstrap standard-error interval and a matched Gaussian null
(``stats.matched_null``) of the set's own n × d. Two sets are compared by

* the difference Δ = b − a, with the interval Δ ± z_{(1+c)/2} · √(SE_a² + SE_b²): each set is
  bootstrapped on its own (``manifold._spectrum_se``: prompts resampled, every resample
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

The matched control (``matched_control``) is a mixed-domain set chosen from the candidate pool
to match the restricted set on prompt length and token-frequency profile (optimal 1:1 matching
without replacement); restricted vs control separates collapse caused by the kind of inference
from collapse caused by lexical narrowness. ``balance`` gives the standardised mean differences.

Random streams: every bootstrap, null and permutation draws from its own generator, derived from
``random_state`` and a key (the set's label, its n × d, or the pair of labels) with
``np.random.SeedSequence(entropy, spawn_key=...)``, so a number does not depend on which or how
many other domains are analysed, and ``contrast(x_mixed, x_math, label_a="mixed",
label_b="math")`` reproduces that contrast of ``compare_domains``.
"""
from __future__ import annotations

import math
import os
import zlib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

import numpy as np
import scipy.optimize
import scipy.spatial.distance
from jaxtyping import Float, Int

from geoprobe.analysis.manifold import _one_blas_thread, _se_interval, _spectrum_se
from geoprobe.analysis.stats import (Estimate, NullBand, RandomState, _quiet, bonferroni, chunk_size,
                                     constant_columns, from_json_float, json_float, matched_null,
                                     spectrum_summary, zscore)
from geoprobe.errors import ResultsError
from geoprobe.paths import JsonResult

METRICS: tuple[str, ...] = ("pc1", "pc12", "pr")
METRIC_LABELS = {"pc1": "PC1", "pc12": "PC1+PC2", "pr": "PR"}
KINDS: tuple[str, ...] = ("mixed", "restricted", "control")
FEATURE_NAMES: tuple[str, ...] = ("n_tokens", "mean_log10_freq", "sd_log10_freq")
RESULTS_KIND = "geoprobe.domains"
RESULTS_VERSION = 1
MIXED = "mixed"
CONTROL_SUFFIX = "-control"
SetKind = Literal["mixed", "restricted", "control"]


# -- random streams ----------------------------------------------------------------------------
def _entropy(random_state: RandomState) -> int:
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
class _SetStats:
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
        return {m: _se_interval(float(self.values[i]), float(self.se[i]), self.confidence, lo[i], hi[i])
                for i, m in enumerate(METRICS)}


def _matrix(x: Any, label: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"set {label!r}: expected an n × D matrix of value vectors, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        bad = np.argwhere(~np.isfinite(x))[0]
        raise ValueError(f"set {label!r} contains NaN/Inf (prompt {bad[0]}, coordinate {bad[1]})")
    if x.shape[0] < 3:
        raise ValueError(f"set {label!r} has {x.shape[0]} prompts; PC1+PC2 with a bootstrap CI needs at least 3")
    if constant_columns(x).all():
        raise ValueError(f"set {label!r}: every coordinate is constant over its {x.shape[0]} prompts; "
                         "there is no variance to analyse (all final-token value vectors are equal)")
    return x


def _set_stats(x: np.ndarray, label: str, entropy: int, n_resamples: int, null_draws: int, confidence: float,
               null_cache: dict[tuple[int, int], NullBand]) -> _SetStats:
    kept = x[:, ~constant_columns(x)]
    n, d = kept.shape
    with _quiet():
        values = spectrum_summary(zscore(kept)[None])[:, 0]
    se = _spectrum_se(kept, n_resamples, _stream(entropy, 0, _key(label)))
    if (n, d) not in null_cache:  # a Gaussian null depends on n × d only
        null_cache[(n, d)] = matched_null(None, n, d, kind="gaussian", draws=null_draws,
                                          random_state=_stream(entropy, 1, n, d), confidence=confidence)
    return _SetStats(label, x, values, se, min(n - 1, d), null_cache[(n, d)], confidence)


def _permutation_diffs(x_a: np.ndarray, x_b: np.ndarray, n_permutations: int,
                       rng: np.random.Generator) -> np.ndarray:
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
        start, g = starts[j], gens[j]
        b = min(step, n_permutations - start)
        idx = g.permuted(np.broadcast_to(ar, (b, big_n)), axis=-1)
        sa = spectrum_summary(zscore(pooled[idx[:, :n_a]]))
        sb = spectrum_summary(zscore(pooled[idx[:, n_a:]]))
        out[:, start:start + b] = sb - sa

    with _quiet():
        if len(starts) > 1:
            with ThreadPoolExecutor(2) as pool:  # LAPACK/BLAS release the GIL
                list(pool.map(chunk, range(len(starts))))
        else:
            chunk(0)
    return out


def _check_sizes(n_a: int, n_b: int, label_a: str, label_b: str, allow_unequal: bool) -> None:
    if n_a != n_b and not allow_unequal:
        raise ValueError(
            f"set {label_a!r} has n = {n_a} prompts and set {label_b!r} has n = {n_b}: PC1 of standardised data "
            "is biased upward by an amount that depends on n when n ≲ D, so the difference would mix that bias "
            f"into the comparison; sample both sets at the same size (e.g. {min(n_a, n_b)} prompts each), "
            "or pass allow_unequal=True and compare each set with its own null band")


def _contrast(sa: _SetStats, sb: _SetStats, entropy: int, n_permutations: int, n_tests: int = 1) -> "DomainContrast":
    conf = sa.confidence
    diffs = _permutation_diffs(sa.x, sb.x, n_permutations, _stream(entropy, 2, _key(sa.label), _key(sb.label)))
    observed = sb.values - sa.values
    diff, p = {}, {}
    for i, m in enumerate(METRICS):
        se = math.hypot(float(sa.se[i]), float(sb.se[i]))
        lo, hi = (-1.0, 1.0) if m != "pr" else (1.0 - sa.k, sb.k - 1.0)
        diff[m] = _se_interval(float(observed[i]), se, conf, lo, hi)
        if not math.isfinite(observed[i]) or not np.all(np.isfinite(diffs[i])):
            p[m] = math.nan
        else:
            # ties at float precision: the permuted statistics are float32, so compare with a
            # relative tolerance rather than let rounding decide an exact tie
            tol = 1e-6 * max(1.0, abs(float(observed[i])))
            p[m] = float((1 + np.sum(np.abs(diffs[i]) >= abs(observed[i]) - tol)) / (1 + n_permutations))
    return DomainContrast(label_a=sa.label, label_b=sb.label, n_a=sa.n, n_b=sb.n, d=sa.x.shape[1],
                          a=sa.estimates(), b=sb.estimates(), diff=diff, p_value=p, null_a=sa.null,
                          null_b=sb.null, n_permutations=n_permutations, n_tests=n_tests)


def _check_counts(n_resamples: int, n_permutations: int, null_draws: int, confidence: float) -> None:
    if n_resamples < 2 or n_permutations < 1 or null_draws < 1:
        raise ValueError(f"n_resamples={n_resamples} (>= 2), n_permutations={n_permutations} (>= 1) and "
                         f"null_draws={null_draws} (>= 1)")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence} must be in (0, 1)")


# -- DomainContrast --------------------------------------------------------------------------
def _estimates(d: Mapping[str, Estimate], what: str) -> dict[str, Estimate]:
    if set(d) != set(METRICS) or any(not isinstance(e, Estimate) for e in d.values()):
        raise ValueError(f"{what} must map exactly {METRICS} to Estimates, got {sorted(d)}")
    return {m: d[m] for m in METRICS}


def _check_ratio(e: Estimate, what: str, lo: float = 0.0, hi: float = 1.0) -> None:
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
class DomainContrast:
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
    null_a: NullBand
    null_b: NullBand
    n_permutations: int = 1000
    n_tests: int = 1
    p_adjusted: dict[str, float] = field(init=False)

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
            _check_ratio(est["pc1"], f"{side}.pc1")
            _check_ratio(est["pc12"], f"{side}.pc12")
            _check_ratio(est["pr"], f"{side}.pr", 1.0, math.inf)
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
        if not isinstance(self.null_a, NullBand) or not isinstance(self.null_b, NullBand) \
                or self.null_a.n != self.n_a or self.null_b.n != self.n_b:
            raise ValueError(f"null bands must be NullBands with n = {self.n_a} and {self.n_b}")
        object.__setattr__(self, "p_adjusted", {m: float(bonferroni([p[m]], self.n_tests)[0]) for m in METRICS})

    def to_dict(self) -> dict[str, Any]:
        return {
            "label_a": self.label_a, "label_b": self.label_b, "n_a": self.n_a, "n_b": self.n_b, "d": self.d,
            "a": {m: e.to_dict() for m, e in self.a.items()}, "b": {m: e.to_dict() for m, e in self.b.items()},
            "diff": {m: e.to_dict() for m, e in self.diff.items()},
            "p_value": {m: json_float(v) for m, v in self.p_value.items()},
            "p_adjusted": {m: json_float(v) for m, v in self.p_adjusted.items()},
            "null_a": self.null_a.to_dict(), "null_b": self.null_b.to_dict(),
            "n_permutations": self.n_permutations, "n_tests": self.n_tests,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "DomainContrast":
        return cls(label_a=str(d["label_a"]), label_b=str(d["label_b"]), n_a=int(d["n_a"]), n_b=int(d["n_b"]),
                   d=int(d["d"]), a={m: Estimate.from_dict(e) for m, e in d["a"].items()},
                   b={m: Estimate.from_dict(e) for m, e in d["b"].items()},
                   diff={m: Estimate.from_dict(e) for m, e in d["diff"].items()},
                   p_value={m: from_json_float(v) for m, v in d["p_value"].items()},
                   null_a=NullBand.from_dict(d["null_a"]), null_b=NullBand.from_dict(d["null_b"]),
                   n_permutations=int(d["n_permutations"]), n_tests=int(d["n_tests"]))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DomainContrast) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]


def contrast(x_a: Float[np.ndarray, "n_a D"], x_b: Float[np.ndarray, "n_b D"], *, label_a: str, label_b: str,
             n_resamples: int = 1000, n_permutations: int = 1000, confidence: float = 0.95,
             random_state: RandomState = 0, allow_unequal: bool = False, null_draws: int = 200) -> DomainContrast:
    """Value-manifold statistics of set b against set a (rows: prompts; columns: the final-token
    value coordinates of one layer, heads concatenated; the same D for both).

    Per set: PC1, PC1+PC2 and PR of the z-scored set (manifold.py's definitions), each with the
    bootstrap-SE interval (``n_resamples`` resamples, each re-standardised), and a Gaussian null
    band of the set's n × d_kept (``null_draws`` draws). The difference b − a has the interval
    ``Δ ± z · √(SE_a² + SE_b²)`` and a two-sided permutation p-value (``n_permutations``
    re-splits of the pooled rows, each set z-scored on its own first). Unequal n raises
    ValueError unless ``allow_unequal``. Deterministic for an int ``random_state``; the streams
    are keyed by the labels (see the module docstring)."""
    _check_counts(n_resamples, n_permutations, null_draws, confidence)
    if not isinstance(label_a, str) or not isinstance(label_b, str) or not label_a or not label_b \
            or label_a == label_b:
        raise ValueError(f"label_a {label_a!r} and label_b {label_b!r} must be two different non-empty strings")
    x_a, x_b = _matrix(x_a, label_a), _matrix(x_b, label_b)
    if x_a.shape[1] != x_b.shape[1]:
        raise ValueError(f"set {label_a!r} has D = {x_a.shape[1]} coordinates and set {label_b!r} has "
                         f"D = {x_b.shape[1]}; both must come from the same layer of the same model")
    _check_sizes(x_a.shape[0], x_b.shape[0], label_a, label_b, allow_unequal)
    entropy = _entropy(random_state)
    cache: dict[tuple[int, int], NullBand] = {}
    with _one_blas_thread():
        sa = _set_stats(x_a, label_a, entropy, n_resamples, null_draws, confidence, cache)
        sb = _set_stats(x_b, label_b, entropy, n_resamples, null_draws, confidence, cache)
        return _contrast(sa, sb, entropy, n_permutations)


# -- matched control selection ---------------------------------------------------------------
def token_counts(token_ids: Sequence[Sequence[int]], vocab_size: int | None = None) -> np.ndarray | dict[int, int]:
    """How often every token id occurs in the prompts: a dict ``{id: count}``, or with
    ``vocab_size`` an int64 array of that length (``np.bincount``)."""
    flat = [int(t) for ids in token_ids for t in ids]
    if any(t < 0 for t in flat):
        raise ValueError("token ids must be >= 0")
    if vocab_size is None:
        return dict(Counter(flat))
    if flat and max(flat) >= vocab_size:
        raise ValueError(f"token id {max(flat)} does not fit vocab_size {vocab_size}")
    return np.bincount(np.asarray(flat, dtype=np.int64), minlength=vocab_size)


def frequency_profile(token_ids: Sequence[Sequence[int]],
                      counts: Mapping[int, int] | Int[np.ndarray, "V"]) -> Float[np.ndarray, "n 2"]:
    """Per prompt: the mean and the standard deviation (ddof 0) of log10 relative frequency over
    its tokens (every occurrence counts).

    Frequencies come from ``counts``, token counts over the candidate pool (``token_counts``),
    with add-one (Laplace) smoothing: ``f(t) = (c_t + 1) / (Σ c + V)``. V is the vocabulary:
    ``len(counts)`` for an array indexed by token id, and for a mapping the ids it has plus any
    id of ``token_ids`` it lacks (those count 0). So a token never seen in the pool still has a
    finite log-frequency."""
    if isinstance(counts, Mapping):
        lookup = {int(k): int(v) for k, v in counts.items()}
        if any(v < 0 for v in lookup.values()):
            raise ValueError("counts must be >= 0")
        vocab = set(lookup) | {int(t) for ids in token_ids for t in ids}
        total, v_size = sum(lookup.values()), len(vocab)

        def freq(ids: np.ndarray) -> np.ndarray:
            return np.array([lookup.get(int(t), 0) for t in ids], dtype=np.float64)
    else:
        arr = np.asarray(counts)
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.number):
            raise ValueError(f"counts must be a mapping id → count or a 1-D array indexed by id, got shape {arr.shape}")
        arr = arr.astype(np.float64)
        if np.any(arr < 0):
            raise ValueError("counts must be >= 0")
        total, v_size = float(arr.sum()), arr.size

        def freq(ids: np.ndarray) -> np.ndarray:
            if ids.size and int(ids.max()) >= v_size:
                raise ValueError(f"token id {int(ids.max())} is outside the counts array (length {v_size})")
            return arr[ids]
    out = np.empty((len(token_ids), 2))
    for i, ids in enumerate(token_ids):
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if ids.size == 0:
            raise ValueError(f"prompt {i} has no tokens")
        if np.any(ids < 0):
            raise ValueError(f"prompt {i} has a negative token id")
        logf = np.log10((freq(ids) + 1.0) / (total + v_size))
        out[i] = logf.mean(), logf.std()
    return out


def match_features(token_ids: Sequence[Sequence[int]],
                   counts: Mapping[int, int] | Int[np.ndarray, "V"]) -> Float[np.ndarray, "n 3"]:
    """The matching features ``FEATURE_NAMES``: [n_tokens, mean log10 freq, sd log10 freq]."""
    lengths = np.array([len(ids) for ids in token_ids], dtype=np.float64)
    return np.column_stack([lengths, frequency_profile(token_ids, counts)])


def _features(f: Any, what: str) -> np.ndarray:
    f = np.asarray(f, dtype=np.float64)
    if f.ndim == 1:
        f = f[:, None]
    if f.ndim != 2 or f.shape[1] < 1:
        raise ValueError(f"{what} must be an (n, F) feature matrix, got shape {f.shape}")
    if not np.all(np.isfinite(f)):
        raise ValueError(f"{what} contains NaN or Inf")
    return f


def matched_control(pool: Float[np.ndarray, "N F"], target: Float[np.ndarray, "m F"], *,
                    exclude: Sequence[int] = (), random_state: RandomState = 0) -> Int[np.ndarray, "m"]:
    """Pool rows matched 1:1 to the target rows, without replacement, minimising the total
    Euclidean distance of features standardised by the eligible pool's sd (a feature with
    sd 0 is left unscaled): ``scipy.optimize.linear_sum_assignment``. Returns m pool indices;
    entry i is the match of target row i. ``exclude`` removes pool rows (e.g. the restricted
    domain's own candidates). ``random_state`` shuffles the pool before assignment, so exact
    ties are broken at random (reproducibly) rather than by position."""
    pool, target = _features(pool, "pool"), _features(target, "target")
    if pool.shape[1] != target.shape[1]:
        raise ValueError(f"pool has {pool.shape[1]} features and target {target.shape[1]}; they must match")
    big_n, m = pool.shape[0], target.shape[0]
    excl = np.asarray(list(exclude), dtype=np.int64).reshape(-1)
    if excl.size and (excl.min() < -big_n or excl.max() >= big_n):
        raise ValueError(f"exclude holds indices outside the pool of {big_n} rows")
    eligible = np.ones(big_n, dtype=bool)
    eligible[excl] = False
    rows = np.flatnonzero(eligible)
    if rows.size < m:
        raise ValueError(f"the pool has {rows.size} eligible rows ({big_n} in all, {big_n - rows.size} excluded) "
                         f"but the target needs {m} matches without replacement; add candidates or shrink the target")
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    rows = np.random.default_rng(random_state).permutation(rows)
    sd = pool[rows].std(axis=0, ddof=1) if rows.size > 1 else np.ones(pool.shape[1])
    sd = np.where(sd > 0, sd, 1.0)
    cost = scipy.spatial.distance.cdist(target / sd, pool[rows] / sd)
    r, c = scipy.optimize.linear_sum_assignment(cost)
    out = np.empty(m, dtype=np.int64)
    out[r] = rows[c]
    return out


def balance(selected: Float[np.ndarray, "m F"], target: Float[np.ndarray, "k F"],
            names: Sequence[str] | None = None) -> dict[str, float]:
    """Standardised mean difference per feature, the usual matching diagnostic:
    ``SMD = (mean_selected − mean_target) / √((var_selected + var_target) / 2)`` (ddof 1).
    |SMD| < 0.1 is the customary threshold for a good match. 0 when both sets are constant and
    equal; NaN when both are constant and differ. ``names`` default to ``FEATURE_NAMES`` for
    three features, else ``feature_0``, ``feature_1``, ..."""
    s, t = _features(selected, "selected"), _features(target, "target")
    if s.shape[1] != t.shape[1] or s.shape[0] < 2 or t.shape[0] < 2:
        raise ValueError(f"selected {s.shape} and target {t.shape} need the same features and >= 2 rows each")
    if names is None:
        names = FEATURE_NAMES if s.shape[1] == len(FEATURE_NAMES) else [f"feature_{j}" for j in range(s.shape[1])]
    names = [str(n) for n in names]
    if len(names) != s.shape[1] or len(set(names)) != len(names):
        raise ValueError(f"{len(names)} names {names} for {s.shape[1]} features; give one distinct name per feature")
    diff = s.mean(0) - t.mean(0)
    pooled = np.sqrt((s.var(0, ddof=1) + t.var(0, ddof=1)) / 2)
    smd = np.where(pooled > 0, diff / np.where(pooled > 0, pooled, 1.0), np.where(diff == 0, 0.0, np.nan))
    return {n: float(v) for n, v in zip(names, smd)}


# -- DomainComparison ------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SetSummary:
    """One prompt set: its value-manifold statistics (bootstrap-SE intervals), its Gaussian null
    band, and descriptors (mean next-token entropy in bits, mean prompt length in tokens)."""

    name: str
    kind: SetKind
    domain: str | None
    n: int
    prompts_hash: str
    pc1: Estimate
    pc12: Estimate
    pr: Estimate
    null: NullBand
    mean_entropy: float
    mean_tokens: float

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"set name must be a non-empty string, got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"set {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        if (self.kind == "mixed") != (self.domain is None):
            raise ValueError(f"set {self.name!r} ({self.kind}): domain {self.domain!r}; a mixed set has no domain, "
                             "a restricted or control set names one")
        object.__setattr__(self, "n", int(self.n))
        object.__setattr__(self, "mean_entropy", float(self.mean_entropy))
        object.__setattr__(self, "mean_tokens", float(self.mean_tokens))
        if self.n < 3:
            raise ValueError(f"set {self.name!r} has n = {self.n}; need >= 3")
        _check_ratio(self.pc1, f"set {self.name!r} pc1")
        _check_ratio(self.pc12, f"set {self.name!r} pc12")
        _check_ratio(self.pr, f"set {self.name!r} pr", 1.0, math.inf)
        if not isinstance(self.null, NullBand) or self.null.n != self.n:
            raise ValueError(f"set {self.name!r}: null must be a NullBand with n = {self.n}")

    @property
    def beats_null_pc1(self) -> bool:
        return bool(self.pc1.value > self.null.pc1.high)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "domain": self.domain, "n": self.n,
                "prompts_hash": self.prompts_hash, "pc1": self.pc1.to_dict(), "pc12": self.pc12.to_dict(),
                "pr": self.pr.to_dict(), "null": self.null.to_dict(), "mean_entropy": json_float(self.mean_entropy),
                "mean_tokens": json_float(self.mean_tokens)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SetSummary":
        return cls(name=str(d["name"]), kind=d["kind"], domain=d["domain"], n=int(d["n"]),
                   prompts_hash=str(d["prompts_hash"]), pc1=Estimate.from_dict(d["pc1"]),
                   pc12=Estimate.from_dict(d["pc12"]), pr=Estimate.from_dict(d["pr"]),
                   null=NullBand.from_dict(d["null"]), mean_entropy=from_json_float(d["mean_entropy"]),
                   mean_tokens=from_json_float(d["mean_tokens"]))


def _fmt_ci(e: Estimate, scale: float = 1.0, digits: int = 1, sign: bool = False) -> str:
    if not math.isfinite(e.value):
        return "n/a"
    f = f"{{:+.{digits}f}}" if sign else f"{{:.{digits}f}}"
    v = f.format(scale * e.value)
    if not (math.isfinite(e.low) and math.isfinite(e.high)):
        return v
    return f"{v} [{f.format(scale * e.low)}, {f.format(scale * e.high)}]"


def _fmt_p(p: float) -> str:
    return "n/a" if not math.isfinite(p) else f"{p:.2g}"


@dataclass(frozen=True, eq=False)
class DomainComparison(JsonResult):
    """Mixed-domain vs domain-restricted value manifolds of one layer (the Table-1 analogue),
    with matched mixed-domain controls. ``contrasts`` holds, per domain d: (mixed → d),
    (mixed → d-control) when a control exists, and (d-control → d); Δ is always label_b −
    label_a. Each family of contrasts is Bonferroni-adjusted across domains (``n_tests``)."""

    _file = "domains.json"
    _page = "domains.html"
    _what = "domain comparison"
    _fix = "pass the domains.json geoprobe compare-domains wrote"

    model: str
    layer: int
    sets: dict[str, SetSummary]
    contrasts: tuple[DomainContrast, ...]
    domains: tuple[str, ...]
    balance: dict[str, dict[str, float]]
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def report(self, path: str | os.PathLike, *, force: bool = False) -> Path:
        """Write the self-contained HTML page of this result."""
        from geoprobe.report.domains import write_domains_report

        return write_domains_report(self, path, force=force)

    def __post_init__(self) -> None:
        object.__setattr__(self, "layer", int(self.layer))
        object.__setattr__(self, "domains", tuple(str(d) for d in self.domains))
        object.__setattr__(self, "contrasts", tuple(self.contrasts))
        object.__setattr__(self, "notes", tuple(str(s) for s in self.notes))
        object.__setattr__(self, "provenance", dict(self.provenance or {}))
        sets = dict(self.sets)
        if any(not isinstance(s, SetSummary) or s.name != k for k, s in sets.items()):
            raise ValueError("sets must map each set's name to its SetSummary")
        mixed = [k for k, s in sets.items() if s.kind == "mixed"]
        if mixed != [MIXED]:
            raise ValueError(f"exactly one mixed set named {MIXED!r} is needed, got {mixed}")
        if len(set(self.domains)) != len(self.domains) or not self.domains:
            raise ValueError(f"domains {self.domains} must be non-empty and distinct")
        for d in self.domains:
            if d not in sets or sets[d].kind != "restricted" or sets[d].domain != d:
                raise ValueError(f"domain {d!r} needs a restricted set named {d!r}")
        for k, s in sets.items():
            if s.kind != "mixed" and s.domain not in self.domains:
                raise ValueError(f"set {k!r} belongs to domain {s.domain!r}, which is not in {self.domains}")
            if s.kind == "control" and k != s.domain + CONTROL_SUFFIX:
                raise ValueError(f"control set {k!r} must be named {s.domain + CONTROL_SUFFIX!r}")
        object.__setattr__(self, "sets", sets)
        for c in self.contrasts:
            if not isinstance(c, DomainContrast) or c.label_a not in sets or c.label_b not in sets:
                raise ValueError("contrasts must be DomainContrasts between named sets")
            for side, label in (("a", c.label_a), ("b", c.label_b)):
                s = sets[label]
                if getattr(c, side)["pc1"] != s.pc1 or getattr(c, f"n_{side}") != s.n:
                    raise ValueError(f"contrast {c.label_a}→{c.label_b} disagrees with set {label!r}")
        pairs = [(c.label_a, c.label_b) for c in self.contrasts]
        if len(set(pairs)) != len(pairs):
            raise ValueError(f"duplicate contrasts in {pairs}")
        bal = {str(d): {str(f): float(v) for f, v in b.items()} for d, b in dict(self.balance).items()}
        if not set(bal) <= set(self.domains):
            raise ValueError(f"balance for unknown domains {sorted(set(bal) - set(self.domains))}")
        object.__setattr__(self, "balance", bal)

    # -- lookup ---------------------------------------------------------------------------------
    def get(self, label_a: str, label_b: str) -> DomainContrast | None:
        """The contrast label_b − label_a, or None."""
        return next((c for c in self.contrasts if (c.label_a, c.label_b) == (label_a, label_b)), None)

    def versus_mixed(self, name: str) -> DomainContrast | None:
        return self.get(MIXED, name)

    # -- persistence ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        from geoprobe import __version__

        return {"kind": RESULTS_KIND, "version": RESULTS_VERSION, "geoprobe": __version__, "model": self.model,
                "layer": self.layer, "domains": list(self.domains),
                "sets": {k: s.to_dict() for k, s in self.sets.items()},
                "contrasts": [c.to_dict() for c in self.contrasts],
                "balance": {d: {f: json_float(v) for f, v in b.items()} for d, b in self.balance.items()},
                "provenance": _json_safe(self.provenance), "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, d: Any, source: str = "domain comparison") -> "DomainComparison":
        from geoprobe.paths import check_results_kind

        d = check_results_kind(d, kind=RESULTS_KIND, version=RESULTS_VERSION, source=source, what="domain comparison",
                               fix="pass a file written by DomainComparison.save, or re-run the comparison")
        try:
            return cls(model=str(d["model"]), layer=int(d["layer"]),
                       sets={k: SetSummary.from_dict(s) for k, s in d["sets"].items()},
                       contrasts=tuple(DomainContrast.from_dict(c) for c in d["contrasts"]),
                       domains=tuple(d["domains"]),
                       balance={k: {f: from_json_float(v) for f, v in b.items()} for k, b in d["balance"].items()},
                       provenance=d.get("provenance") or {}, notes=tuple(d.get("notes", ())))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ResultsError(f"{source} is damaged ({type(exc).__name__}: {exc}); re-run the comparison") from None

    # -- views ----------------------------------------------------------------------------------
    def order(self) -> list[str]:
        """Set names in display order: mixed, then each domain followed by its control."""
        out = [MIXED]
        for d in self.domains:
            out += [n for n in (d, d + CONTROL_SUFFIX) if n in self.sets]
        return out

    def table(self) -> list[dict[str, Any]]:
        """The Table-1 analogue, one row per set (display order): PC1 and PC1+PC2 in % and PR
        with their intervals, the upper end of the set's null PC1 band, Δ vs mixed per metric
        with its interval and the Bonferroni-adjusted permutation p, mean entropy and length."""
        rows = []
        for name in self.order():
            s = self.sets[name]
            c = self.versus_mixed(name)
            row: dict[str, Any] = {
                "set": name, "kind": s.kind, "n": s.n, "PC1 %": _fmt_ci(s.pc1, 100), "PC1+PC2 %": _fmt_ci(s.pc12, 100),
                "PR": _fmt_ci(s.pr), "null PC1 % (upper)": f"{100 * s.null.pc1.high:.1f}"}
            for m, label, scale, unit in (("pc1", "PC1", 100, " pp"), ("pc12", "PC1+PC2", 100, " pp"), ("pr", "PR", 1, "")):
                row[f"Δ{label} vs mixed"] = ("—" if c is None else
                                             f"{_fmt_ci(c.diff[m], scale, sign=True)}{unit}, p = {_fmt_p(c.p_adjusted[m])}")
            row["mean entropy (bits)"] = f"{s.mean_entropy:.2f}"
            row["mean tokens"] = f"{s.mean_tokens:.1f}"
            rows.append(row)
        return rows

    def _title(self, what: str) -> str:
        n = sorted({s.n for s in self.sets.values()})
        return f"{self.model or 'model'}, layer {self.layer}: {what} (n = {', '.join(map(str, n))} per set)"

    def figure(self) -> Any:
        """PC1 %, PC1+PC2 % and PR per set with their intervals, coloured by kind; grey bars are
        each set's Gaussian null band, the dashed line the mixed set's value."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        names = self.order()
        conf = round(100 * self.sets[MIXED].pc1.confidence)
        fig = make_subplots(rows=1, cols=3, subplot_titles=("PC1 (%)", "PC1+PC2 (%)", "participation ratio"))
        colors = {"mixed": "#444444", "restricted": "#d62728", "control": "#1f77b4"}
        for col, m in enumerate(METRICS, start=1):
            scale = 1.0 if m == "pr" else 100.0
            nulls = [getattr(self.sets[k].null, m) for k in names]
            fig.add_trace(go.Bar(x=names, y=[scale * (b.high - b.low) for b in nulls],
                                 base=[scale * b.low for b in nulls], marker=dict(color="rgba(128,128,128,0.25)"),
                                 name=f"Gaussian null ({conf} % band)", legendgroup="null", showlegend=col == 1,
                                 hoverinfo="skip"), row=1, col=col)
            for kind in KINDS:
                ks = [k for k in names if self.sets[k].kind == kind]
                if not ks:
                    continue
                est = [getattr(self.sets[k], m) for k in ks]
                y = np.array([scale * e.value for e in est])
                fig.add_trace(go.Scatter(
                    x=ks, y=y, mode="markers", name=f"{kind} ({conf} % CI)", legendgroup=kind, showlegend=col == 1,
                    marker=dict(color=colors[kind], size=9),
                    error_y=dict(type="data", symmetric=False, array=np.array([scale * e.high for e in est]) - y,
                                 arrayminus=y - np.array([scale * e.low for e in est]))), row=1, col=col)
            fig.add_hline(y=scale * getattr(self.sets[MIXED], m).value, line=dict(color=colors["mixed"], dash="dash"),
                          row=1, col=col)
        fig.update_yaxes(title_text="% of standardised variance", row=1, col=1)
        fig.update_yaxes(title_text="effective dimensions", row=1, col=3)
        fig.update_layout(title=dict(text=self._title("value manifold, mixed vs restricted vs matched control")),
                          template="plotly_white", height=460, barmode="overlay")
        return fig

    def difference_figure(self) -> Any:
        """Forest plot per domain: Δ(restricted − mixed), Δ(control − mixed) and
        Δ(restricted − control) with intervals, for PC1, PC1+PC2 (percentage points) and PR."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        conf = round(100 * self.sets[MIXED].pc1.confidence)
        fig = make_subplots(rows=1, cols=3, shared_yaxes=True,
                            subplot_titles=("ΔPC1 (pp)", "ΔPC1+PC2 (pp)", "ΔPR"))
        series = (("restricted − mixed", lambda d: (MIXED, d), "#d62728", -0.2),
                  ("control − mixed", lambda d: (MIXED, d + CONTROL_SUFFIX), "#1f77b4", 0.0),
                  ("restricted − control", lambda d: (d + CONTROL_SUFFIX, d), "#9467bd", 0.2))
        for col, m in enumerate(METRICS, start=1):
            scale = 1.0 if m == "pr" else 100.0
            for label, pair, color, offset in series:
                pts = [(i, self.get(*pair(d))) for i, d in enumerate(self.domains)]
                pts = [(i, c) for i, c in pts if c is not None]
                if not pts:
                    continue
                x = np.array([scale * c.diff[m].value for _, c in pts])
                fig.add_trace(go.Scatter(
                    x=x, y=[i + offset for i, _ in pts], mode="markers", name=f"{label} ({conf} % CI)",
                    legendgroup=label, showlegend=col == 1, marker=dict(color=color, size=9),
                    text=[f"p = {_fmt_p(c.p_adjusted[m])} (Bonferroni)" for _, c in pts],
                    hovertemplate="%{x:.2f}<br>%{text}<extra></extra>",
                    error_x=dict(type="data", symmetric=False, array=np.array([scale * c.diff[m].high for _, c in pts]) - x,
                                 arrayminus=x - np.array([scale * c.diff[m].low for _, c in pts]))), row=1, col=col)
            fig.add_vline(x=0, line=dict(color="grey", dash="dot"), row=1, col=col)
        fig.update_yaxes(tickvals=list(range(len(self.domains))), ticktext=list(self.domains), autorange="reversed")
        fig.update_layout(title=dict(text=self._title("Δ value manifold by domain")), template="plotly_white",
                          height=max(320, 140 + 60 * len(self.domains)))
        return fig


def _json_safe(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def compare_domains(values: Mapping[str, Float[np.ndarray, "n D"]], *, kinds: Mapping[str, str],
                    domain_of: Mapping[str, str | None], entropies: Mapping[str, Float[np.ndarray, "n"]],
                    n_tokens: Mapping[str, Float[np.ndarray, "n"]], prompts_hash: Mapping[str, str],
                    balance: Mapping[str, Mapping[str, float]] | None = None, model: str = "", layer: int = -1,
                    provenance: Mapping[str, Any] | None = None, n_resamples: int = 1000,
                    n_permutations: int = 1000, confidence: float = 0.95, random_state: RandomState = 0,
                    allow_unequal: bool = False, null_draws: int = 200,
                    notes: Sequence[str] = ()) -> DomainComparison:
    """Mixed vs every restricted domain (and its matched control) at one layer.

    ``values[name]`` is the (n, D) matrix of one set's final-token value vectors. Set names:
    ``"mixed"`` (kind "mixed", domain None), one restricted set per domain named after it
    (kind "restricted", ``domain_of[d] == d``) and optionally ``"<d>-control"`` (kind
    "control", ``domain_of == d``). ``entropies`` (next-token entropy, bits) and ``n_tokens``
    give the descriptive columns; ``balance`` the SMDs of each control's match (``balance()``).
    Contrasts per domain: mixed → d, mixed → d-control, d-control → d; each family is
    Bonferroni-adjusted over the domains that have it. Every set must have the same n unless
    ``allow_unequal``."""
    _check_counts(n_resamples, n_permutations, null_draws, confidence)
    names = list(values)
    for what, m in (("kinds", kinds), ("domain_of", domain_of), ("entropies", entropies),
                    ("n_tokens", n_tokens), ("prompts_hash", prompts_hash)):
        if set(m) != set(names):
            raise ValueError(f"{what} covers sets {sorted(m)}, values covers {sorted(names)}; give every set in both")
    if MIXED not in names or kinds[MIXED] != "mixed":
        raise ValueError(f"a set named {MIXED!r} of kind 'mixed' is needed; sets are {sorted(names)}")
    domains: list[str] = []
    for name in names:
        kind, dom = kinds[name], domain_of[name]
        if kind not in KINDS:
            raise ValueError(f"set {name!r}: kind {kind!r} is not one of {KINDS}")
        if kind == "mixed" and name != MIXED:
            raise ValueError(f"set {name!r} is of kind 'mixed'; only one mixed set, named {MIXED!r}, is allowed")
        if kind == "restricted":
            if dom != name:
                raise ValueError(f"restricted set {name!r} must be named after its domain (domain_of is {dom!r})")
            domains.append(name)
    for name in names:
        if kinds[name] == "control" and (domain_of[name] not in domains or name != f"{domain_of[name]}{CONTROL_SUFFIX}"):
            raise ValueError(f"control set {name!r} (domain {domain_of[name]!r}) must be named '<domain>{CONTROL_SUFFIX}' "
                             f"after a restricted domain; domains are {domains}")
    if not domains:
        raise ValueError(f"no restricted set among {sorted(names)}; give at least one domain")
    xs = {k: _matrix(values[k], k) for k in names}
    dims = {k: x.shape[1] for k, x in xs.items()}
    if len(set(dims.values())) != 1:
        raise ValueError(f"sets have different numbers of coordinates {dims}; use one layer of one model")
    sizes = {k: x.shape[0] for k, x in xs.items()}
    if len(set(sizes.values())) > 1 and not allow_unequal:
        raise ValueError(f"sets differ in size {sizes}: PC1 of standardised data is biased upward by an amount that "
                         f"depends on n when n ≲ D; sample every set at the same size (e.g. {min(sizes.values())} "
                         "prompts each), or pass allow_unequal=True and compare each set with its own null band")
    desc: dict[str, tuple[float, float]] = {}
    for k in names:
        e = np.asarray(entropies[k], dtype=np.float64).reshape(-1)
        t = np.asarray(n_tokens[k], dtype=np.float64).reshape(-1)
        if e.shape != (sizes[k],) or t.shape != (sizes[k],):
            raise ValueError(f"set {k!r}: entropies {e.shape} and n_tokens {t.shape} must have one entry per prompt "
                             f"({sizes[k]})")
        desc[k] = (float(e.mean()), float(t.mean()))
    entropy = _entropy(random_state)
    cache: dict[tuple[int, int], NullBand] = {}
    with _one_blas_thread():
        stats = {k: _set_stats(xs[k], k, entropy, n_resamples, null_draws, confidence, cache) for k in names}
        families: dict[str, list[tuple[str, str]]] = {"restricted-mixed": [], "control-mixed": [],
                                                      "restricted-control": []}
        for d in domains:
            families["restricted-mixed"].append((MIXED, d))
            if d + CONTROL_SUFFIX in xs:
                families["control-mixed"].append((MIXED, d + CONTROL_SUFFIX))
                families["restricted-control"].append((d + CONTROL_SUFFIX, d))
        contrasts = [_contrast(stats[a], stats[b], entropy, n_permutations, n_tests=len(pairs))
                     for pairs in families.values() for a, b in pairs]
    sets = {}
    for k in names:
        est = stats[k].estimates()
        sets[k] = SetSummary(name=k, kind=kinds[k], domain=domain_of[k], n=sizes[k],  # type: ignore[arg-type]
                             prompts_hash=str(prompts_hash[k]), pc1=est["pc1"], pc12=est["pc12"], pr=est["pr"],
                             null=stats[k].null, mean_entropy=desc[k][0], mean_tokens=desc[k][1])
    auto = list(notes)
    if len(set(sizes.values())) > 1:
        auto.append(f"sets differ in size {sizes}; PC1 depends on n, so compare each set with its own null band")
    for k in names:
        if not sets[k].beats_null_pc1:
            auto.append(f"set {k!r}: PC1 {100 * sets[k].pc1.value:.1f} % does not exceed its Gaussian null band "
                        f"(upper {100 * sets[k].null.pc1.high:.1f} %)")
    missing = [d for d in domains if d + CONTROL_SUFFIX not in xs]
    if missing:
        auto.append(f"no matched control for {missing}: restricted vs mixed cannot separate inference mode from "
                    "lexical narrowness there")
    bal = {str(d): {str(f): float(v) for f, v in b.items()} for d, b in dict(balance or {}).items()}
    for d, b in bal.items():
        off = {f: round(v, 2) for f, v in b.items() if not abs(v) < 0.1}
        if off:
            auto.append(f"control for {d!r} is imbalanced (|SMD| >= 0.1): {off}")
    return DomainComparison(model=model, layer=layer, sets=sets, contrasts=tuple(contrasts), domains=tuple(domains),
                            balance=bal, provenance=dict(provenance or {}), notes=tuple(auto))
