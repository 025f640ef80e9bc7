"""Long-sequence stability: final-token geometry as a function of prompt length T.

At every length T of a grid, on N prompts of exactly T tokens:

* value PC1 explained-variance ratio per layer (standardised PCA of the final token's value
  vectors, heads concatenated; :func:`geoprobe.analysis.manifold.value_manifold`), with its
  bootstrap CI over prompts;
* entropy alignment per layer: oriented Spearman ρ between the value PC1 coordinate and the
  next-token entropy (:func:`geoprobe.analysis.alignment.entropy_alignment`; orientation makes
  ρ ≥ 0, so it is |ρ| of the raw coordinate), BCa bootstrap CI;
* mean attention entropy per layer (bits): the final token's attention entropy averaged over
  prompts and heads, and the same divided by log2 T (its maximum).

Critical length of a metric that should not fall (PC1 ratio, |ρ|): with the shortest length
T0 as baseline and CIs [lo_T, hi_T], the smallest T > T0 whose whole CI lies below the
baseline's (hi_T < lo_T0); None when no length does (the metric never degrades beyond its
short-length CI on this grid). A metric with a NaN interval at T0 or T is not judged there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np

from geoprobe.analysis.stats import Estimate
from geoprobe.serial import Record


def critical_length(
    lengths: Sequence[int], estimates: Sequence[Estimate], *, worse: Literal["lower", "higher"] = "lower"
) -> int | None:
    """The smallest length after the first whose CI lies wholly on the ``worse`` side of the first
    length's CI (module docstring): below it for a metric that should not fall (PC1 ratio, |ρ|),
    above it for an error (the wind tunnels' MAE)."""
    if len(lengths) != len(estimates) or not lengths:
        raise ValueError(f"{len(lengths)} lengths but {len(estimates)} estimates")
    base = estimates[0]
    for T, e in zip(lengths[1:], estimates[1:]):
        edge, beyond = (e.high, e.high < base.low) if worse == "lower" else (e.low, e.low > base.high)
        if math.isfinite(edge) and beyond:
            return int(T)
    return None


@dataclass(frozen=True, eq=False)
class LengthPoint(Record):
    """The stability metrics at one prompt length (one entry per analysed layer)."""

    T: int
    n: int
    pc1: tuple[Estimate, ...]
    alignment: tuple[Estimate, ...]
    attn_entropy: tuple[float, ...]  # bits, mean over prompts and heads

    def __post_init__(self) -> None:
        if self.T < 2 or self.n < 3:
            raise ValueError(f"length {self.T} (>= 2) and {self.n} prompts (>= 3)")
        if not (len(self.pc1) == len(self.alignment) == len(self.attn_entropy)):
            raise ValueError("pc1, alignment and attn_entropy need one entry per layer")
        object.__setattr__(self, "attn_entropy", tuple(float(x) for x in self.attn_entropy))
        if any(x < -1e-9 or x > math.log2(self.T) + 1e-6 for x in self.attn_entropy):
            raise ValueError(f"attention entropies {self.attn_entropy} outside [0, log2 {self.T}]")


@dataclass(frozen=True, eq=False)
class Stability(Record):
    """Stability metrics over a length grid; critical lengths per layer (None: never degrades)."""

    layers: tuple[int, ...]
    points: tuple[LengthPoint, ...]

    def __post_init__(self) -> None:
        Ts = [p.T for p in self.points]
        if not Ts or Ts != sorted(set(Ts)):
            raise ValueError(f"lengths {Ts} must be non-empty, increasing and distinct")
        if any(len(p.pc1) != len(self.layers) for p in self.points):
            raise ValueError(f"every length needs one entry per layer ({len(self.layers)})")

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(p.T for p in self.points)

    def series(self, metric: str, layer: int) -> list[Any]:
        i = self.layers.index(layer)
        return [getattr(p, metric)[i] for p in self.points]

    def critical(self, metric: str, layer: int) -> int | None:
        """Critical length of ``metric`` (pc1 | alignment) at ``layer``."""
        return critical_length(self.lengths, self.series(metric, layer))

    def to_dict(self) -> dict[str, Any]:  # stored shape differs: the critical lengths, derived, are written too
        return {
            **super().to_dict(),
            "critical": {
                m: {str(layer): self.critical(m, layer) for layer in self.layers} for m in ("pc1", "alignment")
            },
        }


def length_point(cap: Any, layers: Sequence[int], *, n_resamples: int, seed: int) -> LengthPoint:
    """The stability metrics of one capture (all prompts of one length) at ``layers``."""
    from geoprobe.analysis.alignment import entropy_alignment
    from geoprobe.analysis.manifold import value_manifold

    idx = [cap.index(x) for x in layers]
    T = int(cap.n_tokens.max())
    if int(cap.n_tokens.min()) != T:
        raise ValueError(f"prompts of one length expected, got {int(cap.n_tokens.min())}..{T} tokens")
    values = [cap.values_flat(x) for x in layers]  # one width per layer where layouts differ
    values = np.stack(values) if cap.layout.uniform else values
    vm = value_manifold(
        values,
        tuple(layers),
        cap.next_entropy,
        n_resamples=n_resamples,
        null_draws=1,
        null_kind="gaussian",
        random_state=seed,
    )
    al = entropy_alignment(
        vm.pc1_coords,
        cap.next_entropy,
        tuple(layers),
        n_resamples=n_resamples,
        n_permutations=n_resamples,
        random_state=seed,
    )
    if cap.layout.uniform:
        H = cap.attn_entropy[idx].astype(np.float64).mean(axis=(1, 2))
    else:  # each layer's mean over its own heads
        H = np.array([cap.layer("attn_entropy", x).astype(np.float64).mean() for x in layers])
    return LengthPoint(
        T=T,
        n=cap.n_prompts,
        pc1=vm.pc1,
        alignment=al.spearman,
        attn_entropy=tuple(float(np.clip(h, 0.0, math.log2(T))) for h in H),
    )
