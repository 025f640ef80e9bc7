"""Frame vs precision of one training run (arXiv 2512.22473): progress fractions, t90, and the prompt-level
bootstrap interval of the two t90s and of their difference.

* frame: ``frame(s) = 1 − TV(s)/TV(0)``, TV the total-variation distance of a checkpoint's final-token
  attention patterns to the final checkpoint's (mean over layers, heads and probe prompts);
* precision: ``precision(s) = log(MAE(0)/MAE(s)) / log(MAE(0)/MAE(final))``, MAE the per-sample entropy
  error on held-out sequences (a log scale: the error falls by orders of magnitude);
* ``t90``: the step at which a fraction first reaches 0.9, interpolated linearly in log(step + 1)
  between the checkpoints around the crossing.

A fraction whose measure did not move towards its final value (TV(0) = 0; MAE(final) ≥ MAE(0)) has no
progress to measure: its fraction and t90 are NaN (before, the fraction was 1 everywhere and t90 the
first checkpoint, step 0, which read as "reached at once").

:func:`t90_interval` resamples the probe prompts (for the frame) and the held-out sequences (for the
precision), independently (they are different sets), and recomputes both curves, fractions and t90s in
each draw: a percentile interval for one run, over prompts only. It says nothing about another training
seed (:mod:`geoprobe.windtunnel.frame` does that), and nothing about the coarseness of the checkpoint grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.stats import Estimate
from geoprobe.serial import Record

#: the progress level whose step is reported
LEVEL = 0.9


def frame_fraction(tv: Float[np.ndarray, " C"]) -> Float[np.ndarray, " C"]:
    """``1 − TV(s)/TV(0)``; NaN everywhere when TV(0) ≤ 0 (the patterns never differed from the final ones)."""
    tv = np.asarray(tv, dtype=np.float64)
    if not tv[0] > 0:
        return np.full_like(tv, np.nan)
    return 1.0 - tv / tv[0]


def precision_fraction(mae: Float[np.ndarray, " C"]) -> Float[np.ndarray, " C"]:
    """``log(MAE(0)/MAE(s)) / log(MAE(0)/MAE(final))`` (MAE floored at 1e-12); NaN everywhere when the error
    did not fall (MAE(final) ≥ MAE(0))."""
    lo = np.maximum(np.asarray(mae, dtype=np.float64), 1e-12)
    span = math.log(lo[0] / lo[-1])
    if not span > 0:
        return np.full_like(lo, np.nan)
    return np.log(lo[0] / lo) / span


def t90(steps: Sequence[int], frac: Float[np.ndarray, " C"], level: float = LEVEL) -> float:
    """The step at which ``frac`` first reaches ``level``, interpolated linearly in log(step + 1) between the
    two checkpoints around the crossing (log-spaced checkpoints are far apart late in training); NaN for an
    undefined fraction; the last step when it never reaches ``level``."""
    frac = np.asarray(frac, dtype=np.float64)
    if np.isnan(frac).any():
        return math.nan
    hit = np.flatnonzero(frac >= level)
    if not hit.size:
        return float(steps[-1])
    i = int(hit[0])
    if i == 0 or frac[i] == frac[i - 1]:
        return float(steps[i])
    a, b = math.log(steps[i - 1] + 1), math.log(steps[i] + 1)
    w = (level - frac[i - 1]) / (frac[i] - frac[i - 1])
    return math.exp(a + w * (b - a)) - 1


def log_gap(t_frame: float, t_precision: float) -> float:
    """``log(t_frame + 1) − log(t_precision + 1)``: the difference of two t90s on the scale they are
    interpolated on (negative: the frame first). NaN when either is."""
    return math.log(t_frame + 1) - math.log(t_precision + 1)


@dataclass(frozen=True, eq=False)
class T90Interval(Record):
    """One run's t90s (steps) and their difference in log(step + 1), each with a percentile bootstrap
    interval over its probe prompts (frame) and held-out sequences (precision), resampled independently.
    An interval is NaN when a t90 was undefined in any draw (``undefined`` counts those draws)."""

    frame: Estimate
    precision: Estimate
    difference: Estimate  # log(t90_frame + 1) − log(t90_precision + 1)
    n_prompts: int
    n_sequences: int
    n_resamples: int
    undefined: int = 0


def curve_t90s(
    steps: Sequence[int], tv: Float[np.ndarray, " C"], mae: Float[np.ndarray, " C"]
) -> tuple[float, float, float]:
    """(t90 of the frame, t90 of the precision, their log gap) from the two mean curves."""
    tf, tp = t90(steps, frame_fraction(tv)), t90(steps, precision_fraction(mae))
    return tf, tp, log_gap(tf, tp)


def t90_interval(
    steps: Sequence[int],
    tv_prompts: Float[np.ndarray, "C n"],
    mae_sequences: Float[np.ndarray, "C m"],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> T90Interval:
    """Bootstrap the t90s of one run: ``tv_prompts[c, i]`` is prompt i's TV to the final checkpoint at
    checkpoint c, ``mae_sequences[c, j]`` sequence j's mean |H_model − H_Bayes| there. Each draw resamples
    prompts and sequences with replacement (a generator seeded by ``seed``: prompt indices first, then
    sequence indices, ``n_resamples`` rows each) and recomputes the mean curves and both t90s."""
    tv = np.asarray(tv_prompts, dtype=np.float64)
    mae = np.asarray(mae_sequences, dtype=np.float64)
    if tv.shape[0] != len(steps) or mae.shape[0] != len(steps):
        raise ValueError(f"curves of {tv.shape[0]} and {mae.shape[0]} checkpoints for {len(steps)} steps")
    rng = np.random.default_rng(seed)
    rows_p = rng.integers(0, tv.shape[1], size=(n_resamples, tv.shape[1]))
    rows_s = rng.integers(0, mae.shape[1], size=(n_resamples, mae.shape[1]))
    draws = np.array(
        [curve_t90s(steps, tv[:, ip].mean(1), mae[:, js].mean(1)) for ip, js in zip(rows_p, rows_s)]
    ).reshape(n_resamples, 3)
    point = curve_t90s(steps, tv.mean(1), mae.mean(1))
    bad = int(np.isnan(draws).any(axis=1).sum())
    alpha = 1 - confidence

    def interval(k: int) -> Estimate:
        if bad or not math.isfinite(point[k]):
            return Estimate(point[k], math.nan, math.nan, confidence)
        low, high = np.quantile(draws[:, k], [alpha / 2, 1 - alpha / 2])
        return Estimate(point[k], float(low), float(high), confidence)

    return T90Interval(interval(0), interval(1), interval(2), tv.shape[1], mae.shape[1], n_resamples, bad)


__all__ = [
    "LEVEL",
    "T90Interval",
    "curve_t90s",
    "frame_fraction",
    "log_gap",
    "precision_fraction",
    "t90",
    "t90_interval",
]
