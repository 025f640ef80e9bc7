"""Attention focusing: how concentrated each head's final-token attention is, layer by layer.

Definition (the paper's attention-focusing analysis). For layer ``l``, prompt ``i`` of ``T_i``
tokens and query head ``h`` let ``p_{l,i,h} ∈ Δ^{T_i-1}`` be the final token's attention
distribution. Its entropy in bits is ``H_{l,i,h} = -Σ_t p_t log₂ p_t`` (``Capture.attn_entropy``),
and the per-prompt focusing value is the mean over the ``n_heads`` heads::

    E_{l,i} = (1/n_heads) Σ_h H_{l,i,h}

— never ``H(mean_h p_{l,i,h})``: entropy is concave, so by Jensen's inequality the entropy of
the head-averaged distribution is ``≥`` the average entropy; the gap is the generalised
Jensen–Shannon divergence between the heads (it measures head disagreement, not focusing).

The layer profile is ``mean_i E_{l,i}`` with a bootstrap CI over prompts; the ceiling is the
entropy of uniform attention, ``mean_i log₂ T_i``. The reduction from the first to the last
captured layer is ``R = 100 · (1 - Ē_last / Ē_first)`` % with a paired bootstrap CI over prompts
and a one-sided paired permutation (sign-flip) p-value for ``mean_i (E_first,i - E_last,i) > 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from jaxtyping import Float, Int

from geoprobe.analysis.stats import Estimate, bootstrap_batch, bootstrap_ci, permutation_pvalue
from geoprobe.serial import Record

_TOL = 1e-6  # float32 entropies can be a hair below 0


def entropy_reduction(first: np.ndarray, last: np.ndarray, axis: int = -1) -> np.ndarray:
    """``100 (1 - mean(last) / mean(first))`` along ``axis`` (vectorised for the bootstrap)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * (1.0 - np.mean(last, axis=axis) / np.mean(first, axis=axis))


def _mean_difference(first: np.ndarray, last: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(first - last, axis=axis)


@dataclass(frozen=True, eq=False)
class AttentionFocusing(Record):
    """Attention-entropy profile of one model over prompts (see module docstring). Bits throughout.

    ``per_prompt`` (L, n): head-mean entropy ``E_{l,i}``; ``mean``: per-layer mean over prompts
    with bootstrap CI; ``head_band_10_90``: per-layer 10th/90th percentiles over heads of each
    head's prompt-mean entropy; ``uniform``: per-layer ceiling ``mean_i log₂ T_i``;
    ``reduction``: % reduction first → last captured layer (paired bootstrap CI);
    ``reduction_p``: one-sided paired sign-flip p-value. Equality compares ``to_dict()``.
    """

    model: str
    layers: tuple[int, ...]
    n: int
    per_prompt: Float[np.ndarray, "L n"]
    mean: tuple[Estimate, ...]
    head_band_10_90: tuple[tuple[float, float], ...]
    uniform: tuple[float, ...]
    reduction: Estimate
    reduction_p: float

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "layers", tuple(int(x) for x in self.layers))
        pp = np.array(self.per_prompt, dtype=np.float64)
        pp.setflags(write=False)
        set_(self, "per_prompt", pp)
        L = len(self.layers)
        if L == 0:
            raise ValueError("attention focusing needs at least one layer")
        if len(set(self.layers)) != L:
            raise ValueError(f"layers must be distinct, got {self.layers}")
        if self.n < 1 or pp.shape != (L, self.n):
            raise ValueError(f"per_prompt has shape {pp.shape}, expected ({L}, {self.n})")
        if not np.all(np.isfinite(pp)) or pp.min() < -_TOL:
            raise ValueError("per_prompt entropies must be finite and >= 0 bits")
        set_(self, "mean", tuple(self.mean))
        if len(self.mean) != L or not all(isinstance(e, Estimate) for e in self.mean):
            raise ValueError(f"mean must hold {L} Estimate objects, one per layer")
        band = tuple((float(a), float(b)) for a, b in self.head_band_10_90)
        if len(band) != L:
            raise ValueError(f"head_band_10_90 has {len(band)} entries for {L} layers")
        if any(not (a <= b) for a, b in band) or any(a < -_TOL for a, _ in band):
            raise ValueError("head_band_10_90 needs 0 <= low <= high in every layer")
        set_(self, "head_band_10_90", band)
        uniform = tuple(float(u) for u in self.uniform)
        if len(uniform) != L or any(not (u >= 0 and math.isfinite(u)) for u in uniform):
            raise ValueError(f"uniform must hold {L} finite ceilings >= 0 bits")
        set_(self, "uniform", uniform)
        if not isinstance(self.reduction, Estimate):
            raise ValueError("reduction must be an Estimate")
        p = float(self.reduction_p)
        if not (math.isnan(p) or 0 <= p <= 1):
            raise ValueError(f"reduction_p must lie in [0, 1] or be NaN, got {p}")
        set_(self, "reduction_p", p)


def attention_focusing(
    attn_entropy: Float[np.ndarray, "L n H"] | Sequence[Float[np.ndarray, "n H_l"]],
    layers: Sequence[int],
    n_tokens: Int[np.ndarray, " n"],
    *,
    model: str = "",
    confidence: float = 0.95,
    n_resamples: int = 1000,
    random_state: int | np.random.Generator | None = 0,
) -> AttentionFocusing:
    """Attention-focusing profile from per-head final-token entropies in bits (L, n, H), or one (n, H_l)
    array per layer where layers differ in head count (``Capture.per_layer``): every layer's mean is
    over its own heads."""
    if isinstance(attn_entropy, np.ndarray) or not isinstance(attn_entropy, Sequence):
        e = np.asarray(attn_entropy, dtype=np.float64)
        if e.ndim != 3 or 0 in e.shape:
            raise ValueError(f"attn_entropy must be a non-empty (layers, prompts, heads) array, got shape {e.shape}")
        per_layer = list(e)
    else:
        per_layer = [np.asarray(x, dtype=np.float64) for x in attn_entropy]
        if not per_layer or any(x.ndim != 2 or 0 in x.shape or x.shape[0] != per_layer[0].shape[0] for x in per_layer):
            shapes = [x.shape for x in per_layer]
            raise ValueError(f"attn_entropy must be non-empty (prompts, heads) arrays, got {shapes}")
    L, n = len(per_layer), per_layer[0].shape[0]
    if len(layers) != L:
        raise ValueError(f"{len(layers)} layers given for attn_entropy with {L} layers")
    t = np.asarray(n_tokens)
    if t.shape != (n,) or np.any(t < 1):
        raise ValueError(f"n_tokens must be {n} token counts >= 1, got shape {t.shape}")
    if any(not np.all(np.isfinite(x)) or x.min() < -_TOL for x in per_layer):
        raise ValueError("attn_entropy must be finite and >= 0 bits")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    rng = np.random.default_rng(random_state)
    per_prompt = np.stack([x.mean(axis=1) for x in per_layer])
    # one batched scipy bootstrap over prompts for all layers (same as bootstrap_ci per layer)
    value, low, high = bootstrap_batch(
        (per_prompt,), np.mean, confidence=confidence, n_resamples=n_resamples, random_state=rng
    )
    mean = tuple(Estimate(float(v), float(a), float(b), confidence) for v, a, b in zip(value, low, high))
    band = np.array([np.percentile(x.mean(axis=0), [10, 90]) for x in per_layer]).T  # over each layer's heads
    ceiling = float(np.mean(np.log2(t.astype(np.float64))))
    first, last = per_prompt[0], per_prompt[-1]
    if first.mean() <= 0:  # no entropy to reduce: undefined
        reduction, p = Estimate(math.nan, math.nan, math.nan, confidence), math.nan
    elif np.array_equal(first, last):  # one captured layer (or identical layers): exactly no reduction
        reduction, p = Estimate(0.0, 0.0, 0.0, confidence), 1.0
    else:
        reduction = bootstrap_ci(
            (first, last), entropy_reduction, confidence=confidence, n_resamples=n_resamples, random_state=rng
        )
        p = (
            math.nan
            if n < 2
            else float(
                permutation_pvalue(  # one prompt: nothing to permute
                    (first, last),
                    _mean_difference,
                    permutation_type="samples",
                    alternative="greater",
                    n_resamples=n_resamples,
                    random_state=rng,
                )
            )
        )
    return AttentionFocusing(
        model=model,
        layers=tuple(int(x) for x in layers),
        n=n,
        per_prompt=per_prompt,
        mean=mean,
        head_band_10_90=tuple((float(a), float(b)) for a, b in zip(band[0], band[1])),
        uniform=(ceiling,) * L,
        reduction=reduction,
        reduction_p=p,
    )
