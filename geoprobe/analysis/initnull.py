"""The random-initialisation null of the scorecard's criteria: the same architecture before training,
run through the same prompts (issue 37; arXiv 2512.23752 uses Pythia's step-0 checkpoint as its baseline).

A criterion's statistic S (the final layer's value PC1 share, or PC1+PC2; the attention-entropy
reduction from the first to the last layer; the mean |cos| of W_K columns) is compared with the same
statistic of the model at initialisation, as a **paired contrast** Δ = S(model) − mean_k S(init_k):

* *own initialisation* (``source = "step0"``: the series' own step-0 checkpoint, one draw): prompts are
  resampled with the same indices in the model and its init (``resample_indices``), so the interval of Δ
  is the bootstrap SE interval ``Δ ± z·SE_boot``. For key orthogonality (a property of the weights) heads
  are resampled within each layer, paired by head index (a head of step 0 is that head at init).
* *random-init draws* (``source = "twin"``: k fresh initialisations of the architecture, none of them the
  model's own): a new draw varies too, so the half-width combines the paired bootstrap's with a
  prediction interval over draws: ``√((z·SE_boot)² + (t_{k−1} · s_draws · √(1 + 1/k))²)``, s_draws the
  standard deviation of the draws' statistics (ddof 1). With k = 1 draw there is no estimate of the
  spread between draws, and Δ is not called significant.

The model beats the null when the interval excludes 0 in the direction the criterion claims (more PC1,
more focusing, more orthogonal keys). What is stored (:class:`InitNull`) is enough to recompute every
contrast from the model's own saved arrays: each draw's statistic, its values on the shared resample
indices, its per-prompt entropies and its W_K |cos| per head.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from jaxtyping import Float, Int

from geoprobe.analysis.paired import resample_indices as paired_indices
from geoprobe.analysis.stats import Estimate, zscore
from geoprobe.serial import Record

Source = Literal["step0", "twin"]


def resample_indices(n: int, n_resamples: int, random_state: int) -> Int[np.ndarray, "B n"]:
    """The prompt indices of every resample, shared by a model and its nulls: ``paired.resample_indices`` on
    a stream of their own, keyed (``random_state``, 37), apart from the scan's other resamplings."""
    return paired_indices(n, n_resamples, np.random.SeedSequence([int(random_state), 37]))


def pc_shares(x: Float[np.ndarray, "n D"]) -> tuple[float, float]:
    """(PC1, PC1+PC2) shares of the standardised variance (columns z-scored, constant ones dropped),
    as :class:`geoprobe.analysis.manifold.ValueManifold` computes them."""
    z = zscore(np.asarray(x, dtype=np.float64))
    n, d = z.shape
    gram = z @ z.T if n <= d else z.T @ z
    lam = np.clip(np.linalg.eigvalsh(gram)[::-1], 0.0, None)
    total = lam.sum()
    if total <= 0:
        return math.nan, math.nan
    return float(lam[0] / total), float(lam[:2].sum() / total)


def pc_shares_resampled(x: Float[np.ndarray, "n D"], idx: Int[np.ndarray, "B n"]) -> Float[np.ndarray, "B 2"]:
    """(PC1, PC1+PC2) of every resample ``x[idx[b]]`` (each resample re-standardised)."""
    x = np.asarray(x, dtype=np.float64)
    return np.array([pc_shares(x[row]) for row in idx])


@dataclass(frozen=True, eq=False)
class InitNull(Record):
    """The model at initialisation on the scan's prompts: ``k`` draws (one for the run's own step 0).

    ``pc1``/``pc12`` (k,): the final captured layer's shares; ``pc1_boot``/``pc12_boot`` (k, B): the same on
    the scan's shared resample indices; ``entropy_first``/``entropy_last`` (k, n): head-mean attention
    entropy (bits) of each prompt's final token at the first and last captured layer; ``key_cos`` (k, L, H):
    mean |cos| of each head's W_K columns (NaN where a layer has fewer heads); ``seeds``: the draws' weight
    seeds (empty for a checkpoint)."""

    source: Source
    label: str
    seeds: tuple[int, ...]
    pc1: Float[np.ndarray, " k"]
    pc12: Float[np.ndarray, " k"]
    pc1_boot: Float[np.ndarray, "k B"]
    pc12_boot: Float[np.ndarray, "k B"]
    entropy_first: Float[np.ndarray, "k n"]
    entropy_last: Float[np.ndarray, "k n"]
    key_cos: Float[np.ndarray, "k L H"] | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        if self.source not in ("step0", "twin"):
            raise ValueError(f"unknown null source {self.source!r}")
        for name in ("pc1", "pc12", "pc1_boot", "pc12_boot", "entropy_first", "entropy_last", "key_cos"):
            a = getattr(self, name)
            if a is not None:
                object.__setattr__(self, name, np.asarray(a, dtype=np.float64))
        k = len(self.pc1)
        shapes = {n: getattr(self, n).shape[0] for n in ("pc12", "pc1_boot", "pc12_boot", "entropy_first")}
        if k < 1 or any(v != k for v in shapes.values()):
            raise ValueError(f"an init null needs the same draws in every array: pc1 {k}, {shapes}")

    @property
    def draws(self) -> int:
        return len(self.pc1)

    @property
    def own(self) -> bool:
        """The model's own initialisation (paired by prompt and by head), not fresh draws."""
        return self.source == "step0"


def null_contrast(
    stat: float,
    stat_boot: Float[np.ndarray, " B"],
    null_stats: Float[np.ndarray, " k"],
    null_boot: Float[np.ndarray, "k B"],
    *,
    confidence: float = 0.95,
    own: bool = False,
) -> Estimate:
    """Δ = stat − mean(null_stats) with the interval of the module docstring (NaN interval when the
    draws' spread cannot be estimated: k = 1 fresh draw)."""
    import scipy.stats

    null_stats = np.asarray(null_stats, dtype=np.float64)
    delta = float(stat - null_stats.mean())
    boot = np.asarray(stat_boot, dtype=np.float64) - np.asarray(null_boot, dtype=np.float64).mean(axis=0)
    z = float(scipy.stats.norm.ppf((1 + confidence) / 2))
    half2 = (z * float(np.std(boot, ddof=1))) ** 2
    k = null_stats.size
    if not own:
        if k < 2:
            return Estimate(delta, math.nan, math.nan, confidence)
        t = float(scipy.stats.t.ppf((1 + confidence) / 2, k - 1))
        half2 += (t * float(null_stats.std(ddof=1)) * math.sqrt(1 + 1 / k)) ** 2
    half = math.sqrt(half2)
    return Estimate(delta, delta - half, delta + half, confidence)


def head_contrast(
    per_head: Float[np.ndarray, "L H"],
    null_heads: Float[np.ndarray, "k L H"],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    own: bool = False,
    random_state: int = 0,
) -> Estimate:
    """Δ of the layer-averaged mean |cos| (model − null), heads resampled within each layer (paired by
    head index when ``own``; the model's and each draw's heads resampled independently otherwise)."""
    per_head = np.asarray(per_head, dtype=np.float64)
    null_heads = np.asarray(null_heads, dtype=np.float64)
    rng = np.random.default_rng(np.random.SeedSequence([int(random_state), 38]))

    def stat(a: np.ndarray) -> np.ndarray:  # (..., L, H) -> (...,): mean over layers of the head mean
        return np.nanmean(np.nanmean(a, axis=-1), axis=-1)

    model, nulls = stat(per_head), stat(null_heads)
    L, H = per_head.shape
    idx = rng.integers(0, H, size=(n_resamples, H))
    take = np.take(per_head, idx, axis=1).transpose(1, 0, 2)  # (B, L, H)
    other = idx if own else rng.integers(0, H, size=(n_resamples, H))
    null_take = np.take(null_heads, other, axis=2).transpose(2, 0, 1, 3)  # (B, k, L, H)
    boot_model = stat(take)
    boot_null = stat(null_take).T  # (k, B)
    return null_contrast(float(model), boot_model, nulls, boot_null, confidence=confidence, own=own)
