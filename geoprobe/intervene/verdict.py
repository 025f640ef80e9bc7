"""The causal claim as a verdict: does cutting the entropy axis change SULA calibration more than
cutting matched random axes does? (arXiv 2512.23752 §6.2, §7.1; docs/intervene.md, "The verdict").

For one experiment (layers, strength) and one analytic target H (the posterior entropy or the
predictive entropy, docs/sula.md), with Ĥ₀ the model's label entropy unperturbed, Ĥ_A under the
entropy-axis edit and Ĥ_j under random control j (j = 1..m), per prompt i:

    d_A,i = |Ĥ_A,i − H_i| − |Ĥ₀,i − H_i|      (the prompt's change in absolute error, bits)
    d_j,i = |Ĥ_j,i − H_i| − |Ĥ₀,i − H_i|

so mean_i d_A,i is the change of the SULA MAE under the axis edit. Reported, each with a
percentile CI:

* ``axis_change`` = mean_i d_A,i (bootstrap over prompts);
* ``random_change`` = mean_j mean_i d_j,i, and ``difference`` = axis_change − random_change, both
  from a two-level bootstrap that resamples the prompts *and* the m control axes (so the CI
  carries the spread between random axes as well as between prompts; with m = 1 only the prompts).

The rule (``outcome``), with an equivalence margin δ (``MARGIN_BITS``, 0.02 bits):

* ``"reads out"``: the difference's CI lies inside [−δ, δ]: whatever the axis edit does to
  calibration beyond random axes is smaller than δ bits;
* ``"steers"``: otherwise, if the CI excludes 0: the axis edit changes calibration beyond the
  random axes (worsens it when the difference is positive, improves it when negative);
* ``"inconclusive"``: otherwise (the CI holds 0 but reaches beyond ±δ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.stats import Estimate, RandomState, bootstrap_ci, chunk_size
from geoprobe.serial import Record
from geoprobe.text import number

#: equivalence margin of the rule, bits of SULA MAE (docs/intervene.md explains the choice)
MARGIN_BITS = 0.02
OUTCOMES = ("reads out", "steers", "inconclusive")


def _phrase(outcome: str, difference: Estimate, margin: float, op: str = "cut") -> str:
    if outcome == "reads out":
        return f"no difference beyond ±{margin:g} bits: the axis reads out, it does not steer"
    if outcome == "steers":
        how = "worsens" if difference.value > 0 else "improves"
        return f"the axis {op} {how} calibration beyond random axes: the axis steers"
    return f"inconclusive (the difference's CI holds 0 but reaches beyond ±{margin:g} bits)"


@dataclass(frozen=True, eq=False)
class TargetVerdict(Record):
    """The verdict against one analytic target (see the module docstring); changes in bits of MAE."""

    target: str
    axis_change: Estimate
    random_change: Estimate
    difference: Estimate
    n_controls: int
    outcome: str

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome {self.outcome!r} is not one of {OUTCOMES}")

    def clause(self, op: str, margin: float) -> str:
        axis, random, diff = (number(x, "+.3f") for x in (self.axis_change, self.random_change, self.difference))
        return (
            f"against the {self.target}, the entropy-axis {op} changes SULA MAE by {axis} bits vs "
            f"{random} for {self.n_controls} random axes (difference {diff}): "
            f"{_phrase(self.outcome, self.difference, margin, op)}"
        )


@dataclass(frozen=True, eq=False)
class CalibrationVerdict(Record):
    """The verdict of one experiment (layers edited together, strength) for every target;
    ``headline`` marks the one the report leads with; ``line`` is the sentence it prints."""

    layers: tuple[int, ...]
    strength: float
    op: str
    margin: float
    targets: tuple[TargetVerdict, ...]
    headline: bool = False
    line: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(int(x) for x in self.layers))
        object.__setattr__(self, "targets", tuple(self.targets))
        if not self.targets:
            raise ValueError("a verdict needs at least one target")
        if not self.line:
            object.__setattr__(self, "line", self.sentence())

    def sentence(self) -> str:
        where = f"layers {','.join(map(str, self.layers))}, {self.op} {self.strength:g}"
        return f"Verdict ({where}): " + "; ".join(t.clause(self.op, self.margin) for t in self.targets) + "."

    def outcome(self, target: str) -> str:
        return next(t.outcome for t in self.targets if t.target == target)


def decide(difference: Estimate, margin: float = MARGIN_BITS) -> str:
    """The rule of the module docstring applied to the CI of axis − random-mean."""
    lo, hi = difference.low, difference.high
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive"
    if -margin <= lo and hi <= margin:
        return "reads out"
    if lo > 0 or hi < 0:
        return "steers"
    return "inconclusive"


def calibration_change(
    target: Float[np.ndarray, " n"],
    base: Float[np.ndarray, " n"],
    axis: Float[np.ndarray, " n"],
    controls: Float[np.ndarray, "m n"],
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
) -> tuple[Estimate, Estimate, Estimate]:
    """(axis_change, random_change, difference) in bits of MAE (the module docstring): ``target``
    the analytic entropy per prompt, ``base`` / ``axis`` the model's label entropy unperturbed /
    under the axis edit, ``controls`` under each random edit (one row per control)."""
    h = np.asarray(target, dtype=np.float64)
    e0 = np.abs(np.asarray(base, dtype=np.float64) - h)
    d_axis = np.abs(np.asarray(axis, dtype=np.float64) - h) - e0
    d_rand = np.abs(np.atleast_2d(np.asarray(controls, dtype=np.float64)) - h) - e0
    m, n = d_rand.shape
    if h.ndim != 1 or d_axis.shape != h.shape or n != h.size or m < 1 or n < 1:
        raise ValueError(f"target {h.shape}, axis {d_axis.shape} and controls {d_rand.shape} must share n prompts")
    if not (np.all(np.isfinite(d_axis)) and np.all(np.isfinite(d_rand))):
        raise ValueError("entropies contain NaN or Inf")
    rng = np.random.default_rng(random_state)
    axis_change = bootstrap_ci(
        d_axis, method="percentile", confidence=confidence, n_resamples=n_resamples, random_state=rng
    )
    # prompts resampled ~32 MB of (controls × prompts) at a time: the same draws as all at once
    per_control, axis_b = np.empty((m, n_resamples)), np.empty(n_resamples)
    step = chunk_size(m + 1, n)
    for start in range(0, n_resamples, step):
        rows = rng.integers(0, n, size=(min(step, n_resamples - start), n))
        part = slice(start, start + len(rows))
        per_control[:, part] = d_rand[:, rows].mean(axis=2)  # each control's mean over the resampled prompts
        axis_b[part] = d_axis[rows].mean(axis=1)
    rand_b = np.empty(n_resamples)  # over the resampled controls
    step = chunk_size(2, m)
    for start in range(0, n_resamples, step):
        picks = rng.integers(0, m, size=(min(step, n_resamples - start), m))
        part = slice(start, start + len(picks))
        rand_b[part] = np.take_along_axis(per_control.T[part], picks, axis=1).mean(axis=1)
    diff_b = axis_b - rand_b
    q = [(1 - confidence) / 2, (1 + confidence) / 2]
    r_val, d_val = float(d_rand.mean()), float(d_axis.mean() - d_rand.mean())
    random_change = Estimate(r_val, *map(float, np.quantile(rand_b, q)), confidence)
    difference = Estimate(d_val, *map(float, np.quantile(diff_b, q)), confidence)
    return axis_change, random_change, difference


def calibration_verdict(
    layers: Sequence[int],
    strength: float,
    op: str,
    targets: Mapping[str, Float[np.ndarray, " n"]],
    base: Float[np.ndarray, " n"],
    axis: Float[np.ndarray, " n"],
    controls: Float[np.ndarray, "m n"],
    *,
    margin: float = MARGIN_BITS,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
) -> CalibrationVerdict:
    """The verdict of one experiment against every analytic target in ``targets`` ({name: H per
    prompt}, in the order given: the paper's target first); the same resamples for each target."""
    out = []
    for name, h in targets.items():
        a, r, d = calibration_change(
            h, base, axis, controls, confidence=confidence, n_resamples=n_resamples, random_state=random_state
        )
        out.append(TargetVerdict(name, a, r, d, int(np.atleast_2d(controls).shape[0]), decide(d, margin)))
    return CalibrationVerdict(tuple(layers), float(strength), op, float(margin), tuple(out))


def headline(verdicts: Sequence[CalibrationVerdict]) -> int:
    """Index of the verdict the report leads with: the experiment with the most layers (the paper's
    multi-layer cut), at the strongest edit (largest |strength|; the positive one on a tie)."""
    if not verdicts:
        raise ValueError("no verdicts")
    return max(
        range(len(verdicts)), key=lambda i: (len(verdicts[i].layers), abs(verdicts[i].strength), verdicts[i].strength)
    )
