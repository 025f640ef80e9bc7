"""Does a SULA prompt's PC1 coordinate follow its number of examples k, and more than in a control?

geoprobe 0.1 reported ρ(k, mean PC1): a rank correlation over the values of k (five by default) of
each k's mean PC1. Over five points a Spearman ρ is ±1 whenever the five means are monotone, and
its bootstrap interval is then [±1, ±1]: it was −1.00 [−1.00, −1.00] in the main condition and in the
shuffled and ablated controls alike, so it could not tell a condition from its controls. What this
module computes instead treats the prompts as the replicates:

* **ρ_S(k, PC1) across prompts** (:class:`KTracking`): Spearman's ρ between each prompt's k and its
  oriented PC1 coordinate, over every prompt of the condition (``scipy.stats.rankdata`` and
  ``pearsonr`` via :func:`geoprobe.analysis.alignment.spearman`). Its interval is the percentile
  interval of a bootstrap over prompts **stratified by k** (k is fixed by design, ``n_per_k`` prompts
  at each value: every resample draws that many prompts of each k, with replacement). Its p-value is
  the two-sided permutation test of independence (``scipy.stats.permutation_test``, pairings).
* **the contrast** reference − control (:class:`KContrast`): ρ_S of the reference condition (main)
  minus ρ_S of the control. geoprobe's controls are built prompt by prompt from the main prompts
  (prompt i of a control is prompt i of main with its labels or words changed: same k, same class,
  same draws), so the contrast is **paired**: every resample draws the same prompt indices in both
  conditions. Conditions that do not share prompts are resampled independently (``paired=False``).

An interval whose two ends coincide (every resample, or the central ``confidence`` share of them,
gives one value) is not an interval: its bounds are stored as NaN and ``note`` says why, and every
display prints "no interval" with that reason. The same goes for a value that is undefined (one k,
a constant PC1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator, Mapping

import numpy as np
from jaxtyping import Float, Int

from geoprobe.analysis.alignment import spearman
from geoprobe.analysis.stats import Estimate, RandomState, chunk_size, permutation_pvalue, quiet
from geoprobe.serial import Record
from geoprobe.text import number

#: two resampled values closer than this are the same value (a difference of equal ρ is exactly 0)
SAME = 1e-12


@dataclass(frozen=True, eq=False)
class KTracking(Record):
    """ρ_S(k, PC1) across the ``n`` prompts of one condition. ``rho`` holds the value and its percentile
    interval over ``n_resamples`` bootstrap resamples (NaN bounds when there is no interval: ``note``
    says why); ``p_value`` is the two-sided permutation p of independence (NaN when ρ is undefined)."""

    rho: Estimate
    p_value: float
    n: int
    n_resamples: int
    note: str | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        object.__setattr__(self, "p_value", float(self.p_value))
        object.__setattr__(self, "n", int(self.n))
        object.__setattr__(self, "n_resamples", int(self.n_resamples))


@dataclass(frozen=True, eq=False)
class KContrast(Record):
    """ρ_S(k, PC1) of ``condition`` minus ρ_S(k, PC1) of ``control`` (``difference``, with its percentile
    interval; NaN bounds and a ``note`` when there is none). ``paired``: both conditions were resampled
    on the same prompt indices (the controls are the reference's prompts with labels or words changed)."""

    condition: str
    control: str
    difference: Estimate
    paired: bool
    n_resamples: int
    note: str | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        object.__setattr__(self, "paired", bool(self.paired))
        object.__setattr__(self, "n_resamples", int(self.n_resamples))


def interval_text(est: Estimate | None, note: str | None = None, spec: str = "+.2f", *, reason: bool = True) -> str:
    """An estimate as shown on the SULA page and terminal: ``"-0.62 [-0.70, -0.53]"``; never an interval
    whose two ends are the same: ``"-1.00 (no interval: NOTE)"`` (the note defaults to "every resample
    gives the same value"; ``reason=False``: just ``"-1.00 (no interval)"``); ``"n/a"`` (``"n/a (NOTE)"``)
    for an undefined value. A real interval too narrow for ``spec`` is shown with more significant digits."""
    if est is None:
        return "n/a"
    if not math.isfinite(est.value):
        return f"n/a ({note})" if note and reason else "n/a"
    value = number(est.value, spec)
    if math.isfinite(est.low) and math.isfinite(est.high):
        if est.high - est.low > SAME:  # a real interval: with as many digits as it takes to show it
            for s in (spec, ".2g", ".3g", ".6g"):
                low, high = number(est.low, s), number(est.high, s)
                if low != high:
                    return f"{number(est.value, s)} [{low}, {high}]"
            return f"{value} (interval narrower than the digits shown)"
        note = note or "every resample gives the same value"
    return f"{value} (no interval: {note})" if note and reason else f"{value} (no interval)"


def resampled_indices(
    k: Int[np.ndarray, " n"], n_resamples: int, rng: np.random.Generator, *, chunk: int | None = None
) -> Iterator[Int[np.ndarray, "m n"]]:
    """Bootstrap resamples of prompt indices, stratified by k, in blocks of at most ``chunk`` resamples
    (default: about 32 MB of float64 per block). Column j of a block is a prompt drawn uniformly with
    replacement among the prompts whose k is ``k[j]``, so every resample keeps each k's number of prompts.
    One uniform ``rng.random`` draw per cell, in row order: the blocks hold the same resamples whatever
    their size."""
    k = np.asarray(k)
    step = chunk or chunk_size(4, k.size)  # the indices, two rank arrays and their product
    order = np.argsort(k, kind="stable")  # the prompts grouped by k
    _, first, size = np.unique(k[order], return_index=True, return_counts=True)
    group = np.searchsorted(k[order][first], k)  # each prompt's stratum
    first, size = first[group], size[group]
    for start in range(0, n_resamples, step):
        u = rng.random((min(step, n_resamples - start), k.size))
        yield order[first + np.minimum((u * size).astype(np.intp), size - 1)]


def resampled_rho(
    k: Int[np.ndarray, " n"], pc1: Float[np.ndarray, "c n"], blocks: Iterator[Int[np.ndarray, "m n"]]
) -> Float[np.ndarray, "c r"]:
    """ρ_S(k, PC1) of each row of ``pc1`` (one condition a row, all on the same prompts) on every resample
    of ``blocks`` (:func:`resampled_indices`): row i, column r is ρ_S(k[idx_r], pc1[i, idx_r])."""
    k = np.asarray(k, dtype=np.float64)
    pc1 = np.atleast_2d(np.asarray(pc1, dtype=np.float64))
    out = []
    with quiet():
        for idx in blocks:
            kk = k[idx]
            out.append(np.stack([np.asarray(spearman(kk, row[idx], axis=-1), dtype=np.float64) for row in pc1]))
    return np.concatenate(out, axis=1) if out else np.empty((pc1.shape[0], 0))


def _undefined(k: np.ndarray, pc1: np.ndarray) -> str | None:
    if k.size < 3:
        return f"{k.size} prompts (ρ needs at least 3)"
    if np.ptp(k) == 0:
        return f"every prompt has k = {int(k[0])}"
    if np.ptp(pc1) == 0:
        return "PC1 is the same on every prompt"
    return None


def _interval(value: float, draws: np.ndarray, confidence: float, what: str) -> tuple[Estimate, str | None]:
    """The percentile interval of the finite ``draws`` around ``value``; NaN bounds and the reason when
    the draws give no interval (none finite, or the interval's two ends coincide)."""
    nan = math.nan
    d = draws[np.isfinite(draws)]
    if not math.isfinite(value):
        return Estimate(nan, nan, nan, confidence), None
    if d.size == 0:
        return Estimate(value, nan, nan, confidence), f"no resample gives a defined {what}"
    lo, hi = (float(x) for x in np.quantile(d, [(1 - confidence) / 2, (1 + confidence) / 2]))
    if hi - lo > SAME:
        return Estimate(value, lo, hi, confidence), None
    if np.ptp(d) <= SAME:
        why = f"all {d.size} resamples give {what} = {number(lo, '+.2f')}"
    else:
        why = f"the central {100 * confidence:g} % of the {d.size} resamples all give {what} = {number(lo, '+.2f')}"
    return Estimate(value, nan, nan, confidence), why


def track_k(
    k: Mapping[str, Int[np.ndarray, " n"]],
    pc1: Mapping[str, Float[np.ndarray, " n"]],
    *,
    reference: str = "main",
    paired: bool = True,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
) -> dict[str, tuple[KTracking, KContrast | None]]:
    """ρ_S(k, PC1) across prompts for every condition, and the contrast ``reference`` − condition for
    every other one: ``{condition: (KTracking, KContrast or None for the reference)}``.

    With ``paired`` (geoprobe's controls: prompt i of each condition is the reference's prompt i), every
    condition is resampled on the same stratified prompt indices, so each contrast is a paired bootstrap;
    a condition whose k differs from the reference's at any prompt is then an error. Without it, each
    condition draws its own resamples and the contrasts are unpaired. Seeded: the same ``random_state``
    gives the same numbers. The resamples are :func:`resampled_indices` of the reference's k drawn with
    the first generator of ``np.random.default_rng(random_state).spawn(2)`` (unpaired: with that
    generator's ``spawn(n_conditions)``, the reference first, then the others in the order given); the
    permutation tests use the second generator's ``spawn(n_conditions)``, in the same order."""
    if reference not in k or set(k) != set(pc1):
        raise ValueError(f"conditions {sorted(k)} and {sorted(pc1)} must agree and include {reference!r}")
    if n_resamples < 1 or not 0 < confidence < 1:
        raise ValueError(f"n_resamples {n_resamples} must be >= 1 and confidence {confidence} in (0, 1)")
    names = [reference, *(c for c in k if c != reference)]
    ks = {c: np.asarray(k[c], dtype=np.int64) for c in names}
    ys = {c: np.asarray(pc1[c], dtype=np.float64) for c in names}
    for c in names:
        if ks[c].ndim != 1 or ys[c].shape != ks[c].shape:
            raise ValueError(f"{c}: k has shape {ks[c].shape} but PC1 {ys[c].shape}; one value per prompt each")
        if paired and not np.array_equal(ks[c], ks[reference]):
            raise ValueError(
                f"{c} and {reference} differ in k at some prompt: they are not the same prompts, so they cannot "
                "be paired; pass paired=False"
            )
    rng = np.random.default_rng(random_state)
    boot_rng, perm_rng = rng.spawn(2)
    draws: dict[str, np.ndarray] = {}
    if paired:
        rows = resampled_rho(
            ks[reference], np.stack([ys[c] for c in names]), resampled_indices(ks[reference], n_resamples, boot_rng)
        )
        draws = dict(zip(names, rows))
    else:
        for c, child in zip(names, boot_rng.spawn(len(names))):
            draws[c] = resampled_rho(ks[c], ys[c][None], resampled_indices(ks[c], n_resamples, child))[0]
    out: dict[str, tuple[KTracking, KContrast | None]] = {}
    values = {}
    for c, prng in zip(names, perm_rng.spawn(len(names))):
        undefined = _undefined(ks[c], ys[c])
        with quiet():
            value = math.nan if undefined else float(spearman(ks[c].astype(np.float64), ys[c]))
        rho, why = _interval(value, draws[c], confidence, "ρ_S(k, PC1)")
        p = (
            math.nan
            if undefined
            else permutation_pvalue(
                (ks[c].astype(np.float64), ys[c]),
                spearman,
                permutation_type="pairings",
                n_resamples=n_resamples,
                random_state=prng,
            )
        )
        values[c] = value
        tracking = KTracking(rho=rho, p_value=p, n=ks[c].size, n_resamples=n_resamples, note=undefined or why)
        out[c] = (
            tracking,
            None if c == reference else _contrast(reference, c, values, draws, ys, paired, confidence, n_resamples),
        )
    return out


def _contrast(
    ref: str,
    c: str,
    values: dict[str, float],
    draws: dict[str, np.ndarray],
    ys: dict[str, np.ndarray],
    paired: bool,
    confidence: float,
    n_resamples: int,
) -> KContrast:
    nan = math.nan
    value = values[ref] - values[c]
    what = f"ρ_S({ref}) − ρ_S({c})"
    if not math.isfinite(value):
        which = " and ".join(x for x in (ref, c) if not math.isfinite(values[x]))
        est, why = Estimate(nan, nan, nan, confidence), f"ρ_S(k, PC1) is undefined in {which}"
    else:
        est, why = _interval(value, draws[ref] - draws[c], confidence, what)
        if why is not None and paired and np.array_equal(ys[ref], ys[c]):
            why = f"{c} has the same PC1 as {ref} on every prompt: the difference is 0 in every resample"
    return KContrast(condition=ref, control=c, difference=est, paired=paired, n_resamples=n_resamples, note=why)
