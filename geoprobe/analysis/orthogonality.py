"""Key orthogonality: how close to orthogonal the d_head key directions of each head are.

Definition (paper §4.2, "key orthogonality"). For layer ``l`` and key/value head ``h`` let
``W = W_K^{l,h}`` be the ``D × d`` key projection (``k = x @ W``, ``D = d_model``,
``d = d_head``) and ``w_j ∈ R^D`` its ``j``-th column. With ``u_j = w_j / ‖w_j‖₂``::

    O_{l,h} = 1 / (d (d-1)) · Σ_{i ≠ j} |u_i · u_j|

the mean absolute off-diagonal cosine of the columns' Gram matrix. Orthonormal (or merely
orthogonal) columns give 0; columns with pairwise cosine ``c`` give ``|c|``.

Baselines: two iid Gaussian vectors in ``R^D`` have (exactly)
``E|cos| = Γ(D/2) / (√π Γ((D+1)/2)) ≈ √(2/(πD))``, the value a random ``W_K`` of any width
``d`` has in expectation (pairs of columns are iid); and the architecture's own random
initialisation (a twin, :func:`geoprobe.models.twins.init_key_weights`), which has the same
shapes and initialiser as the trained weights.

:func:`key_activation_cosines` is the activation-side alternative: cosines between captured
final-token key vectors (across prompts within a head, and across heads within a prompt).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.stats import one_blas_thread
from geoprobe.serial import Record

_TOL = 1e-9  # slack for |cos| means computed in floating point
_GRAM_ELEMENTS = 4_000_000  # float64 Gram entries held at once (32 MB) above which blocks of rows are used


def _mean_abs_cos(gram: Float[np.ndarray, "B m m"], what: str) -> Float[np.ndarray, " B"]:
    """Mean |cos| over the m(m-1) off-diagonal pairs of each raw Gram matrix; NaN when m < 2.

    ``cos_ij = G_ij / √(G_ii G_jj)``; a zero (or non-finite) vector has no direction: refused.
    """
    m = gram.shape[-1]
    if m < 2:
        return np.full(gram.shape[0], np.nan)
    sq = np.diagonal(gram, axis1=-2, axis2=-1)
    if not np.all(np.isfinite(sq)):
        raise ValueError(f"{what} contains NaN or Inf")
    if np.any(sq <= 0):
        raise ValueError(f"{what} has an all-zero vector; its cosine is undefined")
    inv = 1.0 / np.sqrt(sq)
    cos = np.abs(gram * inv[:, :, None] * inv[:, None, :])
    return (cos.sum(axis=(-2, -1)) - np.trace(cos, axis1=-2, axis2=-1)) / (m * (m - 1))


def _mean_abs_cos_rows(a: Float[np.ndarray, "n d"]) -> float:
    """:func:`_mean_abs_cos` of the Gram matrix of ``a``'s rows, summed over blocks of rows."""
    n = a.shape[0]
    if n < 2:
        return math.nan
    sq = np.einsum("ij,ij->i", a, a)
    if not np.all(np.isfinite(sq)):
        raise ValueError("keys contains NaN or Inf")
    if np.any(sq <= 0):
        raise ValueError("keys has an all-zero vector; its cosine is undefined")
    inv = 1.0 / np.sqrt(sq)
    step = max(1, _GRAM_ELEMENTS // n)
    total = 0.0
    with one_blas_thread():
        for s in range(0, n, step):
            cos = np.abs((a[s : s + step] @ a.T) * inv[s : s + step, None] * inv[None, :])
            total += float(cos.sum()) - float(np.trace(cos, offset=s))
    return total / (n * (n - 1))


def head_orthogonality(w_k: Float[np.ndarray, "L H D d"]) -> Float[np.ndarray, "L H"]:
    """Mean absolute off-diagonal cosine of the ``d`` columns of each head's ``W_K`` (D × d).

    ``O_{l,h} = Σ_{i≠j} |cos(W[:, i], W[:, j])| / (d(d-1))``, computed in float64 from the Gram
    matrix ``G = WᵀW`` as ``cos_ij = G_ij / √(G_ii G_jj)``.
    """
    w = np.asarray(w_k)
    if w.ndim != 4:
        raise ValueError(f"w_k must be (layers, heads, d_model, d_head), got shape {w.shape}")
    if w.shape[-1] < 2:
        raise ValueError(f"key orthogonality needs d_head >= 2, got {w.shape[-1]}")
    flat = w.reshape(-1, *w.shape[2:])
    # a.T @ a on one (D, d) block is a BLAS syrk; one block at a time keeps the float64 copy small
    gram = np.stack([(a.T @ a) for a in (np.asarray(b, dtype=np.float64) for b in flat)])
    return _mean_abs_cos(gram, "w_k").reshape(w.shape[:2])


def gaussian_baseline(d_model: int, exact: bool = True) -> float:
    """E|cos θ| between two iid N(0, I_D) vectors, D = ``d_model``.

    cos θ has density ∝ (1 - t²)^((D-3)/2) on [-1, 1], whence exactly
    ``E|cos θ| = Γ(D/2) / (√π Γ((D+1)/2))`` (computed with log-gamma; D=2: 2/π, D=3: 1/2);
    ``exact=False`` gives the large-D approximation ``√(2/(πD))`` (relative error ≈ 1/(4D)).
    """
    from scipy.special import gammaln

    d = int(d_model)
    if d != d_model or d < 2:
        raise ValueError(f"d_model must be an integer >= 2, got {d_model!r}")
    if not exact:
        return math.sqrt(2.0 / (math.pi * d))
    return float(np.exp(gammaln(d / 2) - gammaln((d + 1) / 2) - 0.5 * math.log(math.pi)))


def key_activation_cosines(
    keys: Float[np.ndarray, "L n H d"],
) -> tuple[Float[np.ndarray, " L"], Float[np.ndarray, " L"]]:
    """Mean |cos| between captured final-token key vectors, per layer.

    ``within_head[l]``: for each head, mean |cos(k_{l,i,h}, k_{l,j,h})| over prompt pairs i ≠ j,
    averaged over heads (NaN when n < 2). ``across_heads[l]``: for each prompt, mean
    |cos(k_{l,i,g}, k_{l,i,h})| over head pairs g ≠ h, averaged over prompts (NaN when H < 2,
    e.g. multi-query attention).
    """
    k = np.asarray(keys, dtype=np.float64)
    if k.ndim != 4:
        raise ValueError(f"keys must be (layers, prompts, heads, d_head), got shape {k.shape}")
    L, n, H, _ = k.shape
    by_head = [k[layer, :, h] for layer in range(L) for h in range(H)]  # (n, d) each
    if L * H * n * n <= _GRAM_ELEMENTS:  # every head's n × n Gram matrix at once
        with one_blas_thread():
            grams = np.stack([a @ a.T for a in by_head])
        within = _mean_abs_cos(grams, "keys").reshape(L, H).mean(axis=1)
    else:  # many prompts: the same sums over blocks of rows, never n × n at once (equal up to rounding)
        within = np.array([_mean_abs_cos_rows(a) for a in by_head]).reshape(L, H).mean(axis=1)
    flat = k.reshape(L * n, H, -1)
    across = _mean_abs_cos(np.matmul(flat, flat.transpose(0, 2, 1)), "keys").reshape(L, n).mean(axis=1)
    return within, across


# -- result ------------------------------------------------------------------------------
def _bands(per_head: np.ndarray, lo: float, hi: float) -> tuple[tuple[float, float], ...]:
    """Per-layer (lo, hi) percentiles over heads (linear interpolation)."""
    pct = np.nanpercentile if np.isnan(per_head).any() else np.percentile  # NaN: a head the layer does not have
    q = pct(per_head, [lo, hi], axis=1)
    return tuple((float(a), float(b)) for a, b in zip(q[0], q[1]))


def head_mean(per_head: Float[np.ndarray, "L H"]) -> Float[np.ndarray, " L"]:
    """Mean over each layer's heads; NaN marks heads a layer does not have (per-layer head layouts)."""
    return np.nanmean(per_head, axis=1) if np.isnan(per_head).any() else per_head.mean(axis=1)


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def _check_unit_interval(name: str, values: Any, allow_nan: bool = False) -> None:
    arr = np.asarray(values, dtype=np.float64)
    ok = (arr >= -_TOL) & (arr <= 1 + _TOL)
    if allow_nan:
        ok |= np.isnan(arr)
    if not np.all(ok):
        raise ValueError(f"{name} must lie in [0, 1]{' (NaN allowed)' if allow_nan else ''}")


@dataclass(frozen=True, eq=False)
class KeyOrthogonality(Record):
    """Key orthogonality of one model, all captured layers (see module docstring).

    ``per_head`` (L, H) is :func:`head_orthogonality` of W_K; ``layer_mean`` its mean over
    heads; ``band_10_90``/``band_25_75`` the per-layer (low, high) percentiles over heads;
    ``gaussian`` the iid-Gaussian E|cos| for ``d_model``; ``init_per_head`` the same measure on
    the architecture's random initialisation (``init_label`` says which); ``activation_within``
    / ``activation_across`` the optional key-activation cosines. Equality compares ``to_dict()``.
    """

    model: str
    layers: tuple[int, ...]
    d_model: int
    d_head: int
    per_head: Float[np.ndarray, "L H"]
    layer_mean: tuple[float, ...]
    band_10_90: tuple[tuple[float, float], ...]
    band_25_75: tuple[tuple[float, float], ...]
    gaussian: float
    init_per_head: Float[np.ndarray, "L H"] | None = None
    init_label: str | None = None
    activation_within: tuple[float, ...] | None = None
    activation_across: tuple[float, ...] | None = None
    threshold: float = 0.20

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "layers", tuple(int(x) for x in self.layers))
        set_(self, "per_head", _frozen(self.per_head))
        L = len(self.layers)
        if L == 0:
            raise ValueError("key orthogonality needs at least one layer")
        if len(set(self.layers)) != L:
            raise ValueError(f"layers must be distinct, got {self.layers}")
        if self.per_head.ndim != 2 or self.per_head.shape[0] != L or self.per_head.shape[1] == 0:
            raise ValueError(f"per_head has shape {self.per_head.shape}, expected ({L}, heads)")
        if self.d_model < 2 or self.d_head < 2:
            raise ValueError(f"d_model and d_head must be >= 2, got {self.d_model} and {self.d_head}")
        _check_unit_interval("per_head", self.per_head, allow_nan=True)
        if np.isnan(self.per_head).all(axis=1).any():
            raise ValueError("per_head needs at least one head per layer (NaN marks heads a layer does not have)")
        set_(self, "layer_mean", tuple(float(x) for x in self.layer_mean))
        if len(self.layer_mean) != L:
            raise ValueError(f"layer_mean has {len(self.layer_mean)} entries for {L} layers")
        _check_unit_interval("layer_mean", self.layer_mean)
        for name in ("band_10_90", "band_25_75"):
            band = tuple((float(a), float(b)) for a, b in getattr(self, name))
            if len(band) != L:
                raise ValueError(f"{name} has {len(band)} entries for {L} layers")
            if any(a > b for a, b in band):
                raise ValueError(f"{name} has a low percentile above its high one")
            _check_unit_interval(name, band)
            set_(self, name, band)
        if not 0 < self.gaussian <= 1:
            raise ValueError(f"gaussian baseline must lie in (0, 1], got {self.gaussian}")
        if self.init_per_head is not None:
            set_(self, "init_per_head", _frozen(self.init_per_head))
            if self.init_per_head.shape != self.per_head.shape:
                raise ValueError(f"init_per_head has shape {self.init_per_head.shape}, expected {self.per_head.shape}")
            if not np.array_equal(np.isnan(self.init_per_head), np.isnan(self.per_head)):
                raise ValueError("init_per_head must have the same heads as per_head")
            _check_unit_interval("init_per_head", self.init_per_head, allow_nan=True)
        elif self.init_label is not None:
            raise ValueError("init_label given without init_per_head")
        for name in ("activation_within", "activation_across"):
            val = getattr(self, name)
            if val is not None:
                val = tuple(float(x) for x in val)
                if len(val) != L:
                    raise ValueError(f"{name} has {len(val)} entries for {L} layers")
                _check_unit_interval(name, val, allow_nan=True)
                set_(self, name, val)
        if not 0 < self.threshold < 1:
            raise ValueError(f"threshold must lie in (0, 1), got {self.threshold}")

    @property
    def frac_below_threshold(self) -> float:
        """Fraction of layers whose ``layer_mean`` is below ``threshold`` (the paper's criterion
        counts layers; per-head detail is in ``per_head`` and the bands)."""
        return float(np.mean(np.asarray(self.layer_mean) < self.threshold))

    @property
    def init_layer_mean(self) -> tuple[float, ...] | None:
        """Per-layer mean over heads of ``init_per_head`` (None without a random-init baseline)."""
        if self.init_per_head is None:
            return None
        return tuple(float(x) for x in head_mean(self.init_per_head))


def key_orthogonality(
    w_k: Float[np.ndarray, "L H D d"] | Sequence[Float[np.ndarray, "H_l D d_l"]],
    layers: Sequence[int],
    d_model: int,
    *,
    model: str = "",
    init_w_k: Float[np.ndarray, "L H D d"] | Sequence[Float[np.ndarray, "H_l D d_l"]] | None = None,
    init_label: str | None = None,
    keys: Float[np.ndarray, "L n H d"] | Sequence[Float[np.ndarray, "n H_l d_l"]] | None = None,
) -> KeyOrthogonality:
    """Key orthogonality of ``w_k`` (L, Hkv, d_model, d_head) with its baselines.

    ``init_w_k`` (same shape) is the architecture's random initialisation (e.g.
    :func:`geoprobe.models.twins.init_key_weights` sliced to ``layers``); ``keys`` (L, n, Hkv, d)
    adds the activation cosines of :func:`key_activation_cosines`. Where layers differ in head count or
    width (``Capture.per_layer``), each of ``w_k``, ``init_w_k`` and ``keys`` is one array per layer
    ((H_l, D, d_l), (n, H_l, d_l)); ``per_head`` then has the most heads of any layer, NaN beyond a
    layer's own, and ``d_head`` is the widest."""
    ragged = not isinstance(w_k, np.ndarray) and isinstance(w_k, Sequence)
    if not ragged:
        w = np.asarray(w_k)
        if w.ndim != 4:
            raise ValueError(f"w_k must be (layers, heads, d_model, d_head), got shape {w.shape}")
        w_k = list(w)
    ws = [np.asarray(x) for x in w_k]
    if len(layers) != len(ws):
        raise ValueError(f"{len(layers)} layers given for w_k with {len(ws)} layers")
    if any(x.ndim != 3 or x.shape[1] != d_model for x in ws):
        raise ValueError(f"w_k must be (heads, d_model {d_model}, d_head) per layer, got {[x.shape for x in ws]}")
    per_head = _per_head(ws) if ragged else head_orthogonality(w)
    init = None
    if init_w_k is not None:
        inits = [np.asarray(x) for x in init_w_k]
        if [x.shape for x in inits] != [x.shape for x in ws]:
            raise ValueError(f"init_w_k has shapes {[x.shape for x in inits]}, expected those of w_k (same layers)")
        init = _per_head(inits) if ragged else head_orthogonality(np.asarray(init_w_k))
        init_label = "random init" if init_label is None else init_label
    elif init_label is not None:
        raise ValueError("init_label given without init_w_k")
    within = across = None
    if keys is not None:
        ks = [np.asarray(x) for x in keys]
        if len(ks) != len(ws) or any(
            k.ndim != 3 or k.shape[1:] != (x.shape[0], x.shape[2]) or k.shape[0] != ks[0].shape[0]
            for k, x in zip(ks, ws)
        ):
            raise ValueError(f"keys have shapes {[k.shape for k in ks]}, expected (n, heads, d_head) as w_k's layers")
        if ragged:
            pairs = [key_activation_cosines(k[None]) for k in ks]
            w_in, w_ac = np.array([a[0] for a, _ in pairs]), np.array([b[0] for _, b in pairs])
        else:
            w_in, w_ac = key_activation_cosines(np.asarray(keys))
        within, across = tuple(w_in.tolist()), tuple(w_ac.tolist())
    return KeyOrthogonality(
        model=model,
        layers=tuple(int(x) for x in layers),
        d_model=int(d_model),
        d_head=max(int(x.shape[2]) for x in ws),
        per_head=per_head,
        layer_mean=tuple(float(x) for x in head_mean(per_head)),
        band_10_90=_bands(per_head, 10, 90),
        band_25_75=_bands(per_head, 25, 75),
        gaussian=gaussian_baseline(d_model),
        init_per_head=init,
        init_label=init_label,
        activation_within=within,
        activation_across=across,
    )


def _per_head(ws: list[np.ndarray]) -> np.ndarray:
    """:func:`head_orthogonality` of each layer's (H_l, D, d_l) W_K, as (L, max H_l), NaN beyond a layer's heads."""
    out = np.full((len(ws), max(x.shape[0] for x in ws)), np.nan)
    for i, x in enumerate(ws):
        out[i, : x.shape[0]] = head_orthogonality(x[None])[0]
    return out
