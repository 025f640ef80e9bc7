"""Behaviour and geometry of an intervention, true entropy axis vs matched random controls.

Per prompt (final position), unperturbed p vs perturbed q next-token distributions:

* ``delta_entropy``: mean over prompts of H(q) − H(p), bits;
* ``kl``: mean of KL(p ‖ q) = Σ p (log₂ p − log₂ q), bits;
* ``top1_agreement``: share of prompts whose arg-max token is unchanged;
* ``perplexity_ratio``: exp(mean NLL_q − mean NLL_p) over every token position of the held-out
  ``texts`` (perplexity perturbed / unperturbed; also both perplexities);
* ``axis_entropy_rho`` (geometry): Spearman ρ between the entropy-axis coordinate
  (``Axis.coordinate``) of the final-token values at ``geometry_layer`` *as attention read them*
  (after the edit, if that layer is edited) and the next-token entropy of the same (perturbed)
  run. NaN when the coordinate is constant (spread ≤ 1e-5 of its calibration scale: a full cut at
  that layer removes it).

Every number is a mean with a bootstrap CI over prompts (``geoprobe.analysis.stats``; the
perplexity ratio resamples token positions, paired). Controls: the same operation and strength
along ``n_controls`` seeded random axes orthogonal to the entropy axis (``random_axes``),
summarised as mean and sd over the seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import numpy as np
import torch

from geoprobe.analysis.alignment import spearman
from geoprobe.analysis.stats import Estimate, RandomState, bootstrap_ci
from geoprobe.intervene.axis import Axis, InterventionError, random_axes
from geoprobe.intervene.forward import final_logprobs, text_nll
from geoprobe.intervene.ops import Edit, Op, check_edits, intervened, resolve_layer
from geoprobe.models.loading import LoadedModel

_LN2 = math.log(2.0)
METRICS = ("delta_entropy", "kl", "top1_agreement", "perplexity_ratio", "axis_entropy_rho")


def entropy_bits_of(logp: torch.Tensor) -> np.ndarray:
    lp = logp.double()
    return (-(lp.exp() * lp).sum(-1) / _LN2).numpy()


def kl_bits(base: torch.Tensor, pert: torch.Tensor) -> np.ndarray:
    """KL(base ‖ pert) per row, bits, from log-probabilities."""
    b, p = base.double(), pert.double()
    return ((b.exp() * (b - p)).sum(-1) / _LN2).clamp(min=0.0).numpy()


def _nan_estimate() -> Estimate:
    return Estimate(math.nan, math.nan, math.nan)


def axis_entropy_correlation(
    values: np.ndarray, entropy: np.ndarray, axis: Axis, n_resamples: int = 1000, random_state: RandomState = 0
) -> Estimate:
    """Spearman ρ(axis coordinate of ``values`` (n, Hkv, d_head), ``entropy``) with a bootstrap CI."""
    c = axis.coordinate(values)
    h = np.asarray(entropy, dtype=np.float64)
    spread = float(np.dot(axis.head_weight, axis.sigma))  # ≥ the calibration sd of the coordinate
    if np.ptp(c) <= 1e-5 * spread or np.ptp(h) == 0:  # constant up to float32 rounding
        return _nan_estimate()
    return bootstrap_ci(
        (c, h),
        statistic=lambda x, y, axis: spearman(x, y, axis=axis),
        n_resamples=n_resamples,
        method="percentile",
        random_state=random_state,
    )


@dataclass(frozen=True)
class Effects:
    """One intervention's behaviour and geometry (see the module docstring)."""

    delta_entropy: Estimate
    kl: Estimate
    top1_agreement: Estimate
    perplexity_ratio: Estimate
    perplexity_base: float
    perplexity: float
    axis_entropy_rho: Estimate
    axis_entropy_rho_base: Estimate

    def get(self, name: str) -> Estimate:
        return getattr(self, name)


@dataclass
class Baseline:
    """The unperturbed run, computed once and shared by every intervention on the same prompts."""

    logprobs: torch.Tensor
    values: dict[int, np.ndarray]
    nll: np.ndarray


def baseline(
    model: LoadedModel,
    prompts: Sequence[str],
    texts: Sequence[str] = (),
    geometry_layer: int | None = None,
    batch_size: int = 16,
) -> Baseline:
    layers = [] if geometry_layer is None else [geometry_layer]
    lp, values = final_logprobs(model, prompts, batch_size, value_layers=layers)
    return Baseline(lp, values, text_nll(model, texts) if texts else np.zeros(0))


def evaluate(
    model: LoadedModel,
    prompts: Sequence[str],
    edits: Mapping[int, Edit],
    base: Baseline,
    texts: Sequence[str] = (),
    geometry_axis: Axis | None = None,
    batch_size: int = 16,
    n_resamples: int = 1000,
    random_state: RandomState = 0,
) -> Effects:
    """Run ``prompts`` (and ``texts``) with ``edits`` and compare with the unperturbed ``base``."""
    resolved = check_edits(model, edits)
    g_layer = None if geometry_axis is None else geometry_axis.layer
    if geometry_axis is not None and g_layer not in base.values:
        raise InterventionError(
            f"the baseline has no values at geometry layer {g_layer}; build it with baseline(..., geometry_layer=...)"
        )
    with intervened(model, resolved):
        lp, values = final_logprobs(model, prompts, batch_size, value_layers=[] if g_layer is None else [g_layer])
        nll = text_nll(model, texts) if texts else np.zeros(0)
    h0, h1 = entropy_bits_of(base.logprobs), entropy_bits_of(lp)
    kw = dict(n_resamples=n_resamples, random_state=random_state)
    agree = (base.logprobs.argmax(-1) == lp.argmax(-1)).double().numpy()
    if texts:
        ppl_ratio = bootstrap_ci(
            (base.nll, nll), statistic=lambda b, p, axis: np.exp(p.mean(axis) - b.mean(axis)), method="percentile", **kw
        )
        ppl0, ppl1 = float(np.exp(base.nll.mean())), float(np.exp(nll.mean()))
    else:
        ppl_ratio, ppl0, ppl1 = _nan_estimate(), math.nan, math.nan
    if geometry_axis is not None:
        rho = axis_entropy_correlation(values[g_layer], h1, geometry_axis, **kw)
        rho0 = axis_entropy_correlation(base.values[g_layer], h0, geometry_axis, **kw)
    else:
        rho = rho0 = _nan_estimate()
    return Effects(
        delta_entropy=bootstrap_ci(h1 - h0, method="percentile", **kw),
        kl=bootstrap_ci(kl_bits(base.logprobs, lp), method="percentile", **kw),
        top1_agreement=bootstrap_ci(agree, method="percentile", **kw),
        perplexity_ratio=ppl_ratio,
        perplexity_base=ppl0,
        perplexity=ppl1,
        axis_entropy_rho=rho,
        axis_entropy_rho_base=rho0,
    )


@dataclass
class ControlComparison:
    """True-axis effects next to random-axis controls (same operation, strength and layers)."""

    op: str
    strength: float
    layers: tuple[int, ...]
    true: Effects
    controls: list[Effects] = field(default_factory=list)

    def control_summary(self, name: str) -> tuple[float, float]:
        """(mean, sd) over control seeds of one metric's point value (sd ddof 1; NaN if < 2)."""
        xs = np.array([c.get(name).value for c in self.controls], dtype=np.float64)
        xs = xs[np.isfinite(xs)]
        if xs.size == 0:
            return math.nan, math.nan
        return float(xs.mean()), float(xs.std(ddof=1)) if xs.size > 1 else math.nan

    def table(self) -> str:
        """Markdown: metric | entropy axis [95 % CI] | random axes mean ± sd (n seeds)."""
        head = (
            f"| metric ({self.op}, strength {self.strength:g}, layers {list(self.layers)}) | entropy axis [95% CI] "
            f"| random axes mean ± sd ({len(self.controls)} seeds) |\n|---|---|---|\n"
        )
        rows = []
        for name in METRICS:
            e = self.true.get(name)
            m, s = self.control_summary(name)
            rows.append(f"| {name} | {e.value:.4g} [{e.low:.4g}, {e.high:.4g}] | {m:.4g} ± {s:.2g} |")
        return head + "\n".join(rows)


def compare_with_controls(
    model: LoadedModel,
    prompts: Sequence[str],
    axes: Mapping[int, Axis],
    op: Op = "cut",
    strength: float = 1.0,
    n_controls: int = 5,
    texts: Sequence[str] = (),
    geometry_layer: int | None = None,
    random_state: int = 0,
    batch_size: int = 16,
    n_resamples: int = 1000,
    base: Baseline | None = None,
) -> ControlComparison:
    """The edit along the entropy axes ``{layer: Axis}`` and along ``n_controls`` random controls.

    Geometry is always measured along the *entropy* axis of ``geometry_layer`` (default: the
    highest edited layer), for the true edit and the controls alike."""
    n_layers = model.layout.n_layers
    axes_r = {resolve_layer(layer, n_layers): ax for layer, ax in axes.items()}
    edits = check_edits(model, {layer: Edit(ax, op, strength) for layer, ax in axes_r.items()})
    g_layer = max(axes_r) if geometry_layer is None else resolve_layer(geometry_layer, n_layers)
    if g_layer not in axes_r:
        raise InterventionError(f"geometry layer {g_layer} has no entropy axis; pass one of {sorted(axes_r)}")
    g_axis = replace(axes_r[g_layer], layer=g_layer)
    if base is None:
        base = baseline(model, prompts, texts, g_layer, batch_size)
    kw = dict(
        texts=texts, geometry_axis=g_axis, batch_size=batch_size, n_resamples=n_resamples, random_state=random_state
    )
    out = ControlComparison(op, float(strength), tuple(sorted(edits)), evaluate(model, prompts, edits, base, **kw))
    rng = np.random.default_rng(random_state)
    for i in range(n_controls):
        ctrl = {layer: Edit(replace(random_axes(ax, 1, rng)[0], seed=i), op, strength) for layer, ax in axes_r.items()}
        out.controls.append(evaluate(model, prompts, ctrl, base, **kw))
    return out
