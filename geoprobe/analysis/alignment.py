"""Entropy alignment (arXiv 2512.23752 §4.2/§4.4): does the value manifold's PC1 coordinate
track the model's next-token uncertainty?

Per layer: c_i = PC1 coordinate of prompt i (``ManifoldProfile.pc1_coords``), H_i = entropy in
bits of the next-token distribution at prompt i's final token.

* orientation: a principal axis has no sign, so ``o = sign(ρ_S(c, H))`` (+1 when ρ_S = 0 or
  undefined) and every statistic uses the oriented coordinate ``o · c``.
* Spearman ρ_S = Pearson correlation of the ranks (average ranks for ties); Pearson r of the
  raw values. Both with a paired bootstrap CI over prompts (``scipy.stats.bootstrap``, BCa).
* p-value: permutation test (``scipy.stats.permutation_test``, pairings) of |ρ_S|. Because the
  orientation is chosen from the data, the oriented ρ_S is ≥ 0 by construction; testing |ρ_S|
  against its permutation distribution is the honest two-sided test.
* Bonferroni over the L layers tested: ``p_adj = min(1, L · p)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.stats import Estimate, RandomState, bonferroni, bootstrap_batch, chunk_size, quiet
from geoprobe.serial import Record

ALPHA = 0.05  # significance level for the figure's markers (after Bonferroni)


def pearson(x: Float[np.ndarray, "... n"], y: Float[np.ndarray, "... n"], axis: int = -1) -> Float[np.ndarray, "..."]:
    """Pearson r along ``axis`` (``scipy.stats.pearsonr``, vectorised); NaN for constant input."""
    import scipy.stats

    with quiet():
        return scipy.stats.pearsonr(x, y, axis=axis).statistic


def spearman(x: Float[np.ndarray, "... n"], y: Float[np.ndarray, "... n"], axis: int = -1) -> Float[np.ndarray, "..."]:
    """Spearman ρ along ``axis``: Pearson r of ``scipy.stats.rankdata`` ranks (vectorised)."""
    import scipy.stats

    return pearson(scipy.stats.rankdata(x, axis=axis), scipy.stats.rankdata(y, axis=axis), axis=axis)


def _abs_pearson(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.abs(pearson(x, y, axis=axis))


def orientation(coord: Float[np.ndarray, "... n"], entropy: Float[np.ndarray, " n"]) -> Any:
    """+1 or -1 per coordinate vector so that ρ_S(orientation · coord, entropy) >= 0 (+1 if undefined)."""
    rho = np.asarray(spearman(np.asarray(coord, dtype=np.float64), np.broadcast_to(entropy, np.shape(coord))))
    o = np.where(rho < 0, -1, 1)
    return int(o) if o.shape == () else o


def _check(coords: np.ndarray, entropy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    coords = np.asarray(coords, dtype=np.float64)
    entropy = np.asarray(entropy, dtype=np.float64)
    if entropy.ndim != 1 or coords.shape[-1:] != entropy.shape:
        raise ValueError(f"coordinates {coords.shape} and entropy {entropy.shape} must share the prompt axis")
    if entropy.size < 3:
        raise ValueError(f"{entropy.size} prompts; a correlation with a CI needs at least 3")
    if not (np.all(np.isfinite(coords)) and np.all(np.isfinite(entropy))):
        raise ValueError("coordinates or entropies contain NaN or Inf")
    return coords, entropy


def _align(
    coords: np.ndarray,
    entropy: np.ndarray,
    n_resamples: int,
    n_permutations: int,
    confidence: float,
    random_state: RandomState,
    ci_rows: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """All layers at once: coords (L, n). Every layer sees the same resampled prompt indices
    and permutations (one generator per call), so row l equals (up to rounding) a single-layer
    call with the same ``random_state``. ``ci_rows`` (bool, L): rows that get bootstrap CIs
    (the others: point estimate, NaN interval ends); p-values are computed for every row."""
    import scipy.stats

    o = orientation(coords, entropy).reshape(-1)
    oc = coords * o[:, None]
    seeds = np.random.default_rng(random_state).spawn(3)
    kw = dict(confidence=confidence, n_resamples=n_resamples, method="BCa", paired=True)
    rows = np.ones(len(oc), dtype=bool) if ci_rows is None else np.asarray(ci_rows, dtype=bool)
    rho = np.full((3, len(oc)), np.nan)
    r = np.full((3, len(oc)), np.nan)
    rho[0], r[0] = spearman(oc, np.broadcast_to(entropy, oc.shape)), pearson(oc, np.broadcast_to(entropy, oc.shape))
    if rows.any():
        rho[:, rows] = np.stack(bootstrap_batch((oc[rows], entropy), spearman, random_state=seeds[0], **kw))
        r[:, rows] = np.stack(bootstrap_batch((oc[rows], entropy), pearson, random_state=seeds[1], **kw))
    # Permutation test of |ρ_S|: ranks are invariant to permuting prompts, so rank once; with
    # standardised ranks a and b, ρ_S under a permutation π is a · b[π] / n, and all layers and
    # permutations are one matrix product (same estimator as scipy.stats.permutation_test with
    # pairings, p = (1 + #{|ρ_π| ≥ |ρ|}) / (1 + permutations), at a fraction of the cost).
    with quiet():
        a = scipy.stats.zscore(scipy.stats.rankdata(oc, axis=-1), axis=-1)
        b = scipy.stats.zscore(scipy.stats.rankdata(entropy))
    n = len(entropy)
    with np.errstate(invalid="ignore"):
        obs = np.abs(a @ b) / n
    eps = 1e-12 * np.maximum(1.0, obs)  # ties of the statistic count as "as extreme"
    extreme = np.zeros(len(a))
    step = chunk_size(1, n)  # permutations ~32 MB at a time: the same draws as all at once
    nulls = []
    for start in range(0, n_permutations, step):
        perms = seeds[2].permuted(np.broadcast_to(np.arange(n), (min(step, n_permutations - start), n)), axis=-1)
        with np.errstate(invalid="ignore"):
            null = np.abs(a @ b[perms].T) / n  # (L, permutations)
        extreme += np.sum(null >= (obs - eps)[:, None], axis=1)
        nulls.append(np.round(null, 12))  # a chunk's matrix product may round its last bit otherwise
    p = (1.0 + extreme) / (1.0 + n_permutations)
    p = np.where(np.isfinite(obs), p, np.nan)
    null_all = np.concatenate(nulls, axis=1)  # (L, permutations): |ρ_S| under independence
    return {
        "orientation": o,
        "spearman": rho,
        "pearson": r,
        "p": np.asarray(p).reshape(-1),
        "null_mean": null_all.mean(axis=1),
        "null_high": np.quantile(null_all, confidence, axis=1),
    }


class EntropyAlignment:
    """Correlation of one PC1 coordinate with next-token entropy (scikit-learn style).

    ``fit(coord, entropy)`` sets ``orientation_`` (±1), ``spearman_`` and ``pearson_``
    (Estimates of the oriented coordinate, paired BCa bootstrap CIs), ``p_value_`` (permutation
    test of |ρ_S|) and ``n_samples_``."""

    def __init__(
        self,
        n_resamples: int = 1000,
        n_permutations: int = 1000,
        confidence: float = 0.95,
        random_state: RandomState = None,
    ) -> None:
        self.n_resamples = n_resamples
        self.n_permutations = n_permutations
        self.confidence = confidence
        self.random_state = random_state

    def fit(self, coord: Float[np.ndarray, " n"], entropy: Float[np.ndarray, " n"]) -> "EntropyAlignment":
        coord, entropy = _check(coord, entropy)
        if coord.ndim != 1:
            raise ValueError(f"coord must be one vector over prompts, got shape {coord.shape}")
        res = _align(coord[None], entropy, self.n_resamples, self.n_permutations, self.confidence, self.random_state)
        self.orientation_ = int(res["orientation"][0])
        self.spearman_ = Estimate(*res["spearman"][:, 0], self.confidence)
        self.pearson_ = Estimate(*res["pearson"][:, 0], self.confidence)
        self.p_value_ = float(res["p"][0])
        self.n_samples_ = int(coord.size)
        return self


@dataclass(frozen=True, eq=False)
class AlignmentProfile(Record):
    """Entropy alignment for every captured layer (ρ_S ≥ 0 by orientation)."""

    model: str
    layers: tuple[int, ...]
    n: int
    spearman: tuple[Estimate, ...]
    pearson: tuple[Estimate, ...]
    p_value: tuple[float, ...]
    p_bonferroni: tuple[float, ...]
    orientation: tuple[int, ...]
    #: |ρ_S| under independence (the permutation null of the oriented statistic), per layer: its mean and
    #: its upper ``confidence`` quantile (the value ρ must exceed); None in files written before them
    null_mean: tuple[float, ...] | None = field(default=None, metadata={"omit_none": True})
    null_high: tuple[float, ...] | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(int(x) for x in self.layers))
        for name in ("null_mean", "null_high"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(float(x) for x in getattr(self, name)))
        for name in ("spearman", "pearson", "orientation", "p_value", "p_bonferroni"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "p_value", tuple(float(p) for p in self.p_value))
        object.__setattr__(self, "p_bonferroni", tuple(float(p) for p in self.p_bonferroni))
        L = len(self.layers)
        if L == 0 or len(set(self.layers)) != L:
            raise ValueError(f"layers {self.layers} must be non-empty and distinct")
        if self.n < 3:
            raise ValueError(f"n={self.n} prompts; alignment needs at least 3")
        lengths = {k: len(getattr(self, k)) for k in ("spearman", "pearson", "p_value", "p_bonferroni", "orientation")}
        if any(v != L for v in lengths.values()):
            raise ValueError(f"{L} layers but lengths {lengths}")
        if any(o not in (1, -1) for o in self.orientation):
            raise ValueError(f"orientation {self.orientation} must be +1 or -1 per layer")
        for e in self.spearman + self.pearson:
            if not isinstance(e, Estimate) or any(abs(v) > 1 + 1e-9 for v in (e.value, e.low, e.high)):
                raise ValueError(f"correlation {e} is not an Estimate within [-1, 1]")
        if any(e.value < -1e-9 for e in self.spearman):
            raise ValueError("oriented Spearman ρ must be >= 0 (orientation makes it so)")
        for p, q in zip(self.p_value, self.p_bonferroni):
            if not (math.isnan(p) and math.isnan(q)) and not (0 <= p <= q <= 1):
                raise ValueError(f"p-value {p} / Bonferroni {q} must satisfy 0 <= p <= p_adj <= 1")

    @property
    def significant(self) -> tuple[bool, ...]:
        """Layers whose Bonferroni-adjusted p-value is below ALPHA (0.05)."""
        return tuple(bool(q < ALPHA) for q in self.p_bonferroni)


def entropy_alignment(
    pc1_coords: Float[np.ndarray, "L n"],
    next_entropy: Float[np.ndarray, " n"],
    layers: Sequence[int],
    *,
    model: str = "",
    n_resamples: int = 1000,
    n_permutations: int = 1000,
    confidence: float = 0.95,
    random_state: RandomState = 0,
    ci_layers: Sequence[int] | None = None,
) -> AlignmentProfile:
    """EntropyAlignment for every layer, Bonferroni over the layers. Layer l's numbers equal (up
    to rounding) ``EntropyAlignment(..., random_state=random_state).fit(pc1_coords[l], next_entropy)``.
    ``ci_layers`` limits the bootstrap CIs to those layers (the others: NaN interval ends)."""
    coords, entropy = _check(pc1_coords, next_entropy)
    if coords.ndim != 2 or coords.shape[0] != len(layers):
        raise ValueError(f"pc1_coords {coords.shape} must be (L, n) with L = {len(layers)} layers")
    rows = None if ci_layers is None else np.isin(np.asarray(layers), np.asarray(list(ci_layers), dtype=int))
    res = _align(coords, entropy, n_resamples, n_permutations, confidence, random_state, rows)
    return AlignmentProfile(
        model=model,
        layers=tuple(layers),
        n=int(entropy.size),
        spearman=tuple(Estimate(*c, confidence) for c in res["spearman"].T),
        pearson=tuple(Estimate(*c, confidence) for c in res["pearson"].T),
        p_value=tuple(res["p"]),
        p_bonferroni=tuple(bonferroni(res["p"])),
        orientation=tuple(int(o) for o in res["orientation"]),
        null_mean=tuple(res["null_mean"]),
        null_high=tuple(res["null_high"]),
    )
