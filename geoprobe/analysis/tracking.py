"""Tracking geometry across checkpoints and runs, and whether a value PC1 is an axis at all
(issue 37, items 4-5; docs/metrics/tracking.md, docs/metrics/axis_identifiability.md).

Arrays in, numbers out: nothing here sees a model.

* :func:`top_subspace`: the top-k principal directions (rows, orthonormal) of x standardised as
  :class:`~geoprobe.analysis.manifold.ValueManifold` does, in the full D coordinates (a constant
  column has zero loading), so two checkpoints' bases can be compared.
* :func:`principal_angles` between two such bases (radians, ascending) and :func:`axis_angle`
  between two axes (degrees in [0, 90], sign-free).
* :func:`linear_cka` (Kornblith et al. 2019) between two representations of the same n prompts,
  any widths, and :func:`linear_cka_resampled` over paired bootstrap rows.
* :func:`routing_stability`: 1 − Jensen–Shannon divergence (bits) between two final-token
  attention distributions per prompt and head.
* :func:`split_half_pc1`, :func:`eigengap`, :func:`axis_identifiability`: is PC1 of a layer's
  values identifiable (the same axis in two halves of the prompts, above a no-structure null, and
  separated from PC2 by more than North et al.'s (1982) sampling error)?
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from jaxtyping import Float, Int

from geoprobe.analysis.manifold import ValueManifold
from geoprobe.analysis.stats import (
    Estimate,
    RandomState,
    as_matrix,
    constant_columns,
    one_blas_thread,
    quiet,
    spectrum,
    zscore,
)
from geoprobe.analysis.workers import check_stop
from geoprobe.serial import Record

_BATCH_ELEMENTS = 4_000_000  # float64 elements per batch of halves / Gram matrices (32 MB)
_NO_VARIANCE = 1e-12  # centred ‖XᵀX‖_F at or below this fraction of ‖X‖²_F: rounding, no variance


# -- subspaces and axes ----------------------------------------------------------------------
def top_subspace(x: Float[np.ndarray, "n D"], k: int) -> Float[np.ndarray, "k D"]:
    """Orthonormal rows spanning the top-``k`` principal directions of ``x`` standardised per column
    exactly as ValueManifold does (z-scored over the rows, ddof 0). Exactly constant columns get zero
    loading, so every basis lives in the same D coordinates. Fewer than ``k`` rows when the data have
    fewer directions (min(n − 1, non-constant columns)); a ValueError when they have none."""
    x = as_matrix(x)
    if k < 1:
        raise ValueError(f"k={k} must be >= 1")
    vm = ValueManifold(n_components=k).fit(x)
    basis = np.zeros((vm.components_.shape[0], x.shape[1]))
    basis[:, vm.kept_features_] = vm.components_
    return basis


def principal_angles(a: Float[np.ndarray, "k D"], b: Float[np.ndarray, "m D"]) -> Float[np.ndarray, " min(k,m)"]:
    """Principal angles (radians, ascending) between the row spaces of ``a`` and ``b``
    (``scipy.linalg.subspace_angles`` on the transposes; rows need not be orthonormal)."""
    import scipy.linalg
    import scipy.linalg.lapack
    import scipy.special

    a, b = np.atleast_2d(as_matrix(np.atleast_2d(a))), as_matrix(np.atleast_2d(b))
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"bases live in {a.shape[1]} and {b.shape[1]} dimensions")
    return np.sort(scipy.linalg.subspace_angles(a.T, b.T))


def axis_angle(u: Float[np.ndarray, " D"], v: Float[np.ndarray, " D"]) -> float:
    """Angle in degrees in [0, 90] between two axes (signs ignored: arccos |cos|); NaN for a zero vector."""
    u, v = np.asarray(u, dtype=np.float64).ravel(), np.asarray(v, dtype=np.float64).ravel()
    if u.shape != v.shape:
        raise ValueError(f"axes of {u.size} and {v.size} coordinates")
    norm = float(np.linalg.norm(u) * np.linalg.norm(v))
    if norm == 0.0 or not math.isfinite(norm):
        return math.nan
    return math.degrees(math.acos(min(1.0, abs(float(u @ v)) / norm)))


# -- linear CKA ------------------------------------------------------------------------------
def _paired(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = as_matrix(x), as_matrix(y)
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x has {x.shape[0]} rows and y {y.shape[0]}: CKA compares the same prompts")
    return x, y


def linear_cka(x: Float[np.ndarray, "n d1"], y: Float[np.ndarray, "n d2"]) -> float:
    """Linear CKA (Kornblith et al. 2019) of two representations of the same n rows: columns
    centred, ``‖YᵀX‖²_F / (‖XᵀX‖_F ‖YᵀY‖_F)`` in float64. Through the n × n Gram matrices
    (``⟨K, L⟩_F / (‖K‖_F ‖L‖_F)``, K = XXᵀ, the same number) when that is cheaper. In [0, 1]; 1 for
    identical inputs, invariant to orthogonal maps and isotropic scaling of either side; NaN when a
    side has no variance."""
    x, y = _paired(x, y)
    floor = _NO_VARIANCE * np.array([np.vdot(x, x), np.vdot(y, y)])
    x, y = x - x.mean(axis=0), y - y.mean(axis=0)
    n, d1, d2 = x.shape[0], x.shape[1], y.shape[1]
    with quiet():
        if n * n * (d1 + d2) <= n * (d1 * d2 + d1 * d1 + d2 * d2):
            k, g = x @ x.T, y @ y.T
            num, nx, ny = np.vdot(k, g), np.linalg.norm(k), np.linalg.norm(g)
        else:
            num = np.linalg.norm(y.T @ x) ** 2
            nx, ny = np.linalg.norm(x.T @ x), np.linalg.norm(y.T @ y)
        return float(num / (nx * ny)) if nx > floor[0] and ny > floor[1] else math.nan


def linear_cka_resampled(
    x: Float[np.ndarray, "n d1"], y: Float[np.ndarray, "n d2"], idx: Int[np.ndarray, "B m"]
) -> Float[np.ndarray, " B"]:
    """:func:`linear_cka` of ``(x[idx[b]], y[idx[b]])`` for every row b (the same rows on both sides:
    a paired bootstrap when ``idx`` holds resampled prompt indices). Each resample is re-centred.
    With n² small, one n × n Gram matrix per side is gathered and double-centred per resample
    (batched, ~32 MB at a time); otherwise each resample is computed on its own."""
    x, y = _paired(x, y)
    idx = np.asarray(idx)
    if idx.ndim != 2 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"idx must be a (B, m) integer array, got {idx.dtype} {idx.shape}")
    n, (b, m) = x.shape[0], idx.shape
    if b and (idx.min() < -n or idx.max() >= n):
        raise ValueError(f"idx holds rows outside 0..{n - 1}")
    if n * n > _BATCH_ELEMENTS:
        return np.array([linear_cka(x[i], y[i]) for i in idx])
    x, y = x - x.mean(axis=0), y - y.mean(axis=0)  # a shift of every row changes no resample's CKA
    k0, g0 = x @ x.T, y @ y.T
    out = np.empty(b)
    step = max(1, _BATCH_ELEMENTS // max(1, m * m))
    for start in range(0, b, step):
        check_stop()
        rows = idx[start : start + step]
        k, g = (_double_centre(a[rows[:, :, None], rows[:, None, :]]) for a in (k0, g0))
        num = np.einsum("bij,bij->b", k, g)
        nx, ny = np.sqrt(np.einsum("bij,bij->b", k, k)), np.sqrt(np.einsum("bij,bij->b", g, g))
        live = (nx > _NO_VARIANCE * np.diag(k0)[rows].sum(1)) & (ny > _NO_VARIANCE * np.diag(g0)[rows].sum(1))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + len(rows)] = np.where(live, num / (nx * ny), np.nan)
    return out


def _double_centre(k: np.ndarray) -> np.ndarray:
    """H K H (H the centring matrix) of each Gram matrix in the batch."""
    return k - k.mean(axis=-1, keepdims=True) - k.mean(axis=-2, keepdims=True) + k.mean(axis=(-2, -1), keepdims=True)


# -- routing stability -----------------------------------------------------------------------
def routing_stability(p: Float[np.ndarray, "n H T"], q: Float[np.ndarray, "n H T"]) -> Float[np.ndarray, "n H"]:
    """1 − JSD₂(p, q) per prompt and head: the Jensen–Shannon divergence in bits (in [0, 1]) between
    two final-token attention distributions over the same positions, ``Capture.attn_pattern[l]``
    of two checkpoints on the same prompts ((n, H, T), the t-th real token of each prompt; positions
    past a prompt's length are zero in both). 1 = the same routing, 0 = disjoint supports.

    Zero entries are allowed (0 · log 0 = 0). A row that sums to less than 1 (an attention sink's
    mass, gpt-oss) gets the missing mass as one extra outcome, so a change of sink mass counts;
    a row that sums to more (rounding) is renormalised (an all-zero row is all sink). Negative or
    non-finite entries are an error."""
    import scipy.linalg
    import scipy.linalg.lapack
    import scipy.special

    p, q = (np.asarray(a, dtype=np.float64) for a in (p, q))
    if p.shape != q.shape or p.ndim != 3:
        raise ValueError(f"p {p.shape} and q {q.shape} must both be (n, H, T)")
    for name, a in (("p", p), ("q", q)):
        if not np.all(np.isfinite(a)) or (a < 0).any():
            raise ValueError(f"{name} holds negative, NaN or Inf attention weights")
    p, q = _with_sink(p), _with_sink(q)
    mid = 0.5 * (p + q)
    with np.errstate(invalid="ignore", divide="ignore"):
        js = 0.5 * (scipy.special.rel_entr(p, mid).sum(-1) + scipy.special.rel_entr(q, mid).sum(-1)) / math.log(2)
    return 1.0 - np.clip(js, 0.0, 1.0)


def _with_sink(a: np.ndarray) -> np.ndarray:
    """``a`` with one more outcome holding 1 − Σ (0 when Σ >= 1), each row then divided by its sum."""
    total = a.sum(axis=-1, keepdims=True)
    out = np.concatenate([a, np.clip(1.0 - total, 0.0, None)], axis=-1)
    return out / out.sum(axis=-1, keepdims=True)


# -- is PC1 an axis? -------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SplitHalf(Record):
    """Split-half stability of PC1: ``value`` is the median over ``n_splits`` random halvings of the
    prompts of |cos| between PC1 fitted on one half and PC1 fitted on the other (each half
    centred on its own after the layer's z-scoring; see :func:`split_half_pc1`), its interval the
    splits' central ``confidence`` quantiles. The null: every column permuted independently across
    prompts (no cross-feature structure, same n and d), ``null_draws`` halvings of ``null_sets``
    such data sets; ``null_mean`` and ``null_high`` (upper ``confidence`` quantile) of their |cos|.
    ``identifiable``: value > null_high."""

    value: Estimate
    null_high: float
    null_mean: float
    n: int
    d: int
    n_splits: int
    null_draws: int
    null_sets: int
    identifiable: bool

    def __post_init__(self) -> None:
        for name in ("null_high", "null_mean"):
            object.__setattr__(self, name, float(getattr(self, name)))
        for name in ("n", "d", "n_splits", "null_draws", "null_sets"):
            object.__setattr__(self, name, int(getattr(self, name)))
        object.__setattr__(self, "identifiable", bool(self.identifiable))
        if not isinstance(self.value, Estimate):
            raise ValueError(f"value {self.value!r} must be an Estimate")
        for v in (self.value.value, self.value.low, self.value.high, self.null_high, self.null_mean):
            if not (math.isnan(v) or -1e-9 <= v <= 1 + 1e-9):
                raise ValueError(f"|cos| {v} is not in [0, 1]")
        if self.identifiable != bool(self.value.value > self.null_high):
            raise ValueError(f"identifiable={self.identifiable} disagrees with {self.value.value} > {self.null_high}")


@dataclass(frozen=True, eq=False)
class Eigengap(Record):
    """North et al. (1982) rule of thumb for PC1: the sampling error of an eigenvalue is
    δλ ≈ λ·√(2/n), so PC1 is separated from PC2 when r1 − r2 > r1·√(2/n) (explained-variance
    ratios r; the rule is scale-free). ``gap`` = r1 − r2, ``north_error`` = r1·√(2/n)."""

    pc1: float
    pc2: float
    n: int
    gap: float
    north_error: float
    separated: bool

    def __post_init__(self) -> None:
        for name in ("pc1", "pc2", "gap", "north_error"):
            object.__setattr__(self, name, float(getattr(self, name)))
        object.__setattr__(self, "n", int(self.n))
        object.__setattr__(self, "separated", bool(self.separated))
        if self.separated != bool(self.gap > self.north_error):
            raise ValueError(f"separated={self.separated} disagrees with gap {self.gap} > {self.north_error}")


def eigengap(ratios: Float[np.ndarray, " k"], n: int) -> Eigengap:
    """North's rule on the leading explained-variance ratios (descending; a missing PC2 counts as 0)
    of n samples. NaN and not separated when there is no spectrum."""
    r = np.asarray(ratios, dtype=np.float64).ravel()
    if n < 1:
        raise ValueError(f"n={n} must be >= 1")
    if r.size >= 2 and r[1] > r[0] + 1e-12:
        raise ValueError(f"ratios {r[:2]} are not in descending order")
    r1 = float(r[0]) if r.size else math.nan
    r2 = float(r[1]) if r.size >= 2 else (0.0 if r.size else math.nan)
    gap, err = r1 - r2, r1 * math.sqrt(2.0 / n)
    return Eigengap(r1, r2, int(n), gap, err, bool(gap > err))


def _top_pairs(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Largest eigenvalue (B,) and its unit eigenvector (B, m) of each symmetric matrix in ``g``
    (LAPACK dsyevr for one index, called directly: a fraction of a full eigendecomposition)."""
    import scipy.linalg
    import scipy.linalg.lapack
    import scipy.special

    m = g.shape[-1]
    lam, vec = np.empty(len(g)), np.empty(g.shape[:2])
    for i, a in enumerate(g):
        w, v, _, _, info = scipy.linalg.lapack.dsyevr(a, compute_v=1, range="I", il=m, iu=m)
        if info != 0:
            raise np.linalg.LinAlgError(f"dsyevr failed (info={info})")
        lam[i], vec[i] = w[0], v[:, 0]
    return np.clip(lam, 0.0, None), vec


def _cos_from_gram(k: np.ndarray, orders: np.ndarray, m: int) -> np.ndarray:
    """|cos| between the PC1 loadings of rows ``orders[:, :m]`` and ``orders[:, m:]`` of standardised
    data z, each half centred on its own, from K = z zᵀ alone: with u the top eigenvector (eigenvalue
    λ) of a half's centred Gram H K H, the loading is zᵀHu/√λ, so the cosine is uₐᵀ K[A, B] u_b / √(λₐλ_b)."""
    a, b = orders[:, :m], orders[:, m:]
    lam_a, u_a = _top_pairs(_double_centre(k[a[:, :, None], a[:, None, :]]))
    lam_b, u_b = _top_pairs(_double_centre(k[b[:, :, None], b[:, None, :]]))
    u_a -= u_a.mean(axis=1, keepdims=True)  # ⊥ 1 already, up to rounding
    u_b -= u_b.mean(axis=1, keepdims=True)
    cross = np.einsum("si,sij,sj->s", u_a, k[a[:, :, None], b[:, None, :]], u_b)
    tiny = np.finfo(float).eps * np.maximum(np.trace(k) / len(k), np.finfo(float).tiny)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((lam_a > tiny) & (lam_b > tiny), np.abs(cross) / np.sqrt(lam_a * lam_b), np.nan)


def _pc1(h: np.ndarray, scale: bool) -> np.ndarray:
    """Unit PC1 loadings (B, D) of each half in the batch (B, m, D), centred (and z-scored with
    ``scale``) on its own; constant columns load 0; NaN rows where a half has no variance."""
    z = zscore(h, scale=scale)
    if z.shape[1] <= z.shape[2]:
        _, u = _top_pairs(z @ np.swapaxes(z, 1, 2))  # m × m Gram: PC1 ∝ zᵀu₁
        v = np.einsum("bmd,bm->bd", z, u)
    else:
        v = _top_pairs(np.swapaxes(z, 1, 2) @ z)[1]
    norm = np.linalg.norm(v, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 0, v / norm, np.nan)


def _cos_from_rows(x: np.ndarray, orders: np.ndarray, m: int, scale: bool) -> np.ndarray:
    """The same |cos| from the rows themselves, each half standardised on its own (``scale``) or
    only centred; batched ~32 MB at a time."""
    out, step = np.empty(len(orders)), max(1, _BATCH_ELEMENTS // x.size)
    for start in range(0, len(orders), step):
        check_stop()
        h = x[orders[start : start + step]]
        out[start : start + len(h)] = np.abs(np.einsum("bd,bd->b", _pc1(h[:, :m], scale), _pc1(h[:, m:], scale)))
    return out


def split_half_pc1(
    x: Float[np.ndarray, "n D"],
    *,
    n_splits: int = 200,
    null_draws: int = 200,
    null_sets: int = 20,
    confidence: float = 0.95,
    random_state: RandomState = 0,
    restandardise: bool = False,
) -> SplitHalf:
    """:class:`SplitHalf` of one layer's values x (n prompts × D); halves of ⌊n/2⌋ and ⌈n/2⌉ prompts.

    x is z-scored once over all n prompts, as ValueManifold does (its column scales are the
    layer's fixed coordinates), and each half is centred on its own and gets its own PCA; the
    cosines then come from the n × n Gram matrix (no pass over D per halving). With
    ``restandardise`` each half is also z-scored on its own (ValueManifold fitted on the half
    literally; a pass over n × D per halving).

    The null: ``null_sets`` data sets with every column permuted independently across prompts
    (exact uniform permutations), ``null_draws`` random halvings spread over them; ``null_high`` is
    the upper ``confidence`` quantile of a single halving's |cos| under no cross-feature
    structure. Comparing the observed median with it is conservative (a median over many halvings
    varies less than one halving)."""
    x = as_matrix(x)
    n, d = x.shape
    if n < 4:
        raise ValueError(f"{n} prompts; two halves with a PC1 each need at least 4")
    if min(n_splits, null_draws, null_sets) < 1 or not 0.0 < confidence < 1.0:
        raise ValueError(
            f"n_splits={n_splits}, null_draws={null_draws}, null_sets={null_sets} (>= 1), confidence={confidence}"
        )
    null_sets = min(null_sets, null_draws)
    g_split, g_null = np.random.default_rng(random_state).spawn(2)
    m = n // 2
    data = x if restandardise else zscore(x)
    gram = not restandardise and m <= d and n * n <= _BATCH_ELEMENTS

    def halvings(g: np.random.Generator, count: int) -> np.ndarray:
        return g.permuted(np.broadcast_to(np.arange(n), (count, n)), axis=1)

    def stat(a: np.ndarray, orders: np.ndarray) -> np.ndarray:
        return _cos_from_gram(a @ a.T, orders, m) if gram else _cos_from_rows(a, orders, m, restandardise)

    with one_blas_thread():
        obs = stat(data, halvings(g_split, n_splits))
        counts = np.diff(np.linspace(0, null_draws, null_sets + 1).round().astype(int))
        null = []
        for count in counts:
            check_stop()
            perm = np.argsort(g_null.random((d, n)), axis=1)  # one uniform permutation per column
            null.append(stat(np.take_along_axis(data.T, perm, axis=1).T, halvings(g_null, int(count))))
    null = np.concatenate(null)
    tail = (1 - confidence) / 2
    obs, null = obs[np.isfinite(obs)], null[np.isfinite(null)]
    if obs.size == 0:
        value = Estimate(math.nan, math.nan, math.nan, confidence)
    else:
        lo, hi = np.quantile(obs, [tail, 1 - tail])
        value = Estimate(float(np.median(obs)), float(lo), float(hi), confidence)
    high = float(np.quantile(null, confidence)) if null.size else math.nan
    mean = float(null.mean()) if null.size else math.nan
    return SplitHalf(value, high, mean, n, d, n_splits, null_draws, null_sets, bool(value.value > high))


@dataclass(frozen=True, eq=False)
class AxisIdentifiability(Record):
    """Per layer: the split-half stability of PC1 and North's eigengap; ``identifiable`` when the
    split-half median |cos| beats its null's upper quantile AND PC1 is separated from PC2. An
    entropy-alignment claim about "the PC1 axis" of a layer that is not identifiable is unfounded."""

    model: str
    layers: tuple[int, ...]
    n: int
    split_half: tuple[SplitHalf, ...]
    eigengap: tuple[Eigengap, ...]
    identifiable: tuple[bool, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(int(x) for x in self.layers))
        object.__setattr__(self, "split_half", tuple(self.split_half))
        object.__setattr__(self, "eigengap", tuple(self.eigengap))
        object.__setattr__(self, "identifiable", tuple(bool(b) for b in self.identifiable))
        L = len(self.layers)
        if L == 0 or len(set(self.layers)) != L:
            raise ValueError(f"layers {self.layers} must be non-empty and distinct")
        if not len(self.split_half) == len(self.eigengap) == len(self.identifiable) == L:
            raise ValueError(f"{L} layers but {len(self.split_half)}, {len(self.eigengap)}, {len(self.identifiable)}")
        derived = tuple(s.identifiable and e.separated for s, e in zip(self.split_half, self.eigengap))
        if self.identifiable != derived:
            raise ValueError(f"identifiable {self.identifiable} disagrees with split-half and eigengap {derived}")

    def of(self, layer: int) -> bool:
        """Whether ``layer``'s PC1 is identifiable."""
        return self.identifiable[self.layers.index(int(layer))]

    def note(self, layer: int) -> str:
        """The empty string for an identifiable PC1, else one line saying why not, e.g. ``PC1 not identifiable
        (split-half |cos| 0.16 ≤ null 0.31; eigengap 0.006 within North's error 0.022)``."""
        i = self.layers.index(int(layer))
        if self.identifiable[i]:
            return ""
        s, e, why = self.split_half[i], self.eigengap[i], []
        if not s.identifiable:
            why.append(f"split-half |cos| {s.value.value:.2f} ≤ null {s.null_high:.2f}")
        if not e.separated:
            why.append(f"eigengap {e.gap:.3f} within North's error {e.north_error:.3f}")
        return f"PC1 not identifiable ({'; '.join(why)})"


def axis_identifiability(
    values: Float[np.ndarray, "L n D"] | Sequence[Float[np.ndarray, "n D_l"]],
    layers: Sequence[int],
    *,
    model: str = "",
    n_splits: int = 200,
    null_draws: int = 200,
    null_sets: int = 20,
    confidence: float = 0.95,
    random_state: RandomState = 0,
    restandardise: bool = False,
) -> AxisIdentifiability:
    """:func:`split_half_pc1` and :func:`eigengap` (of the ValueManifold spectrum of all n prompts)
    for every layer's values (an (L, n, D) array or one (n, D_l) array per layer, same n). One child
    generator per layer, so a layer's numbers do not depend on the other layers."""
    layers = tuple(int(x) for x in layers)
    vals = [as_matrix(v) for v in values]
    if len(vals) != len(layers) or len({v.shape[0] for v in vals}) > 1:
        raise ValueError(f"{len(layers)} layers need as many (n, D) arrays with one n, got {[v.shape for v in vals]}")
    rngs = np.random.default_rng(random_state).spawn(len(layers))
    halves, gaps = [], []
    with quiet(), one_blas_thread():
        for v, g in zip(vals, rngs):
            kw = dict(null_sets=null_sets, confidence=confidence, restandardise=restandardise)
            halves.append(split_half_pc1(v, n_splits=n_splits, null_draws=null_draws, random_state=g, **kw))
            gaps.append(eigengap(spectrum(v), v.shape[0]) if (~constant_columns(v)).any() else eigengap([], v.shape[0]))
    return AxisIdentifiability(
        model=model,
        layers=layers,
        n=vals[0].shape[0],
        split_half=tuple(halves),
        eigengap=tuple(gaps),
        identifiable=tuple(s.identifiable and e.separated for s, e in zip(halves, gaps)),
    )
