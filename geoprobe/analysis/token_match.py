"""Matched controls for domain restriction: a mixed-domain set chosen from a candidate pool to
match a restricted set on prompt length and token-frequency profile (optimal 1:1 matching
without replacement, :func:`matched_control`); restricted vs control separates collapse caused
by the kind of inference from collapse caused by lexical narrowness. :func:`balance` gives the
standardised mean differences of a match."""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np
from jaxtyping import Float, Int

from geoprobe.analysis.stats import RandomState

FEATURE_NAMES: tuple[str, ...] = ("n_tokens", "mean_log10_freq", "sd_log10_freq")


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


def frequency_profile(
    token_ids: Sequence[Sequence[int]], counts: Mapping[int, int] | Int[np.ndarray, " V"]
) -> Float[np.ndarray, "n 2"]:
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


def match_features(
    token_ids: Sequence[Sequence[int]], counts: Mapping[int, int] | Int[np.ndarray, " V"]
) -> Float[np.ndarray, "n 3"]:
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


def matched_control(
    pool: Float[np.ndarray, "N F"],
    target: Float[np.ndarray, "m F"],
    *,
    exclude: Sequence[int] = (),
    random_state: RandomState = 0,
) -> Int[np.ndarray, " m"]:
    """Pool rows matched 1:1 to the target rows, without replacement, minimising the total
    Euclidean distance of features standardised by the eligible pool's sd (a feature with
    sd 0 is left unscaled): ``scipy.optimize.linear_sum_assignment``. Returns m pool indices;
    entry i is the match of target row i. ``exclude`` removes pool rows (e.g. the restricted
    domain's own candidates). ``random_state`` shuffles the pool before assignment, so exact
    ties are broken at random (reproducibly) rather than by position."""
    import scipy.optimize
    import scipy.spatial.distance

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
        raise ValueError(
            f"the pool has {rows.size} eligible rows ({big_n} in all, {big_n - rows.size} excluded) "
            f"but the target needs {m} matches without replacement; add candidates or shrink the target"
        )
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


def balance(
    selected: Float[np.ndarray, "m F"], target: Float[np.ndarray, "k F"], names: Sequence[str] | None = None
) -> dict[str, float]:
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
