"""The paper's three criteria (arXiv 2512.23752 §4.4), each with its value, its interval where it has one,
and its **null: the same architecture at random initialisation, run through the same prompts** (issue 37;
geoprobe.analysis.initnull, geoprobe.scan.nulls). A criterion *passes* only when its threshold is met
**and** the model beats that null: an untrained model passes nothing.

1. **Value manifold**: PC1 > 30 % or PC1+PC2 > 30 % of the standardised variance of the final captured
   layer's value vectors. Null contrast: Δ = share(model) − share(init), paired over prompts. The
   Gaussian (or permuted) matched null of the same n × d stays in the detail as a second reference: a
   random network's values are not i.i.d. Gaussian, so beating it says little.
2. **Key orthogonality**: mean |cos| of W_K columns < 0.20 in at least 50 % of layers. The fraction of
   layers is a count and gets no interval. Null contrast: Δ = mean |cos|(model) − mean |cos|(init),
   layers averaged, heads resampled (paired by head for the model's own step 0); the model beats the
   null when Δ's interval lies below 0 (trained keys more orthogonal than at init). The Gaussian
   expectation √(2/(π·d_model)) stays in the detail.
3. **Attention focusing**: the head-averaged attention entropy of the final token falls by more than
   30 % from the first to the last captured layer. Null contrast: Δ = reduction(model) −
   reduction(init), paired over prompts; the paired sign-flip test against "no reduction" stays in the
   detail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from geoprobe.analysis.initnull import InitNull, head_contrast, null_contrast
from geoprobe.analysis.orthogonality import head_mean
from geoprobe.analysis.paired import reduction_resampled
from geoprobe.analysis.stats import Estimate
from geoprobe.serial import Record

PC_THRESHOLD = 0.30
ORTHO_THRESHOLD = 0.20
ORTHO_LAYER_FRACTION = 0.50
FOCUS_THRESHOLD = 30.0  # percent


@dataclass(frozen=True, eq=False)
class Criterion(Record):
    key: str
    label: str
    statement: str
    value: Estimate
    unit: str  # "fraction" | "percent"
    passes: bool
    null_label: str
    null_value: float | None
    beats_null: bool | None  # None: no null could be computed
    detail: str = ""
    #: the paired contrast with the random-init null (model − init) and its interval; None: no null
    contrast: Estimate | None = field(default=None, metadata={"omit_none": True})
    #: whether the threshold alone is met (``passes`` also needs ``beats_null``); None in files before it
    threshold_met: bool | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        if self.key not in ("value_manifold", "key_orthogonality", "attention_focusing"):
            raise ValueError(f"unknown criterion {self.key!r}")
        if self.unit not in ("fraction", "percent"):
            raise ValueError(f"unknown unit {self.unit!r}")

    def formatted(self, x: float | None, signed: bool = False) -> str:
        """A value as printed, on the page and the command line alike: a percentage (or, ``signed``, a
        difference in percentage points; a difference of key |cos| as a cosine), never ``-0.0``
        (geoprobe.text.number); a value under 0.05 in two significant digits rather than a rounded 0.0, and one
        under 0.0001 as ``≈ 0``, not in a program's exponent notation (``-1e-07 %``)."""
        from geoprobe.text import number

        if x is None or not np.isfinite(x):
            return "n/a"
        if signed and self.key == "key_orthogonality":
            return number(x, "+.4f")
        v, unit = (100 * x if self.unit == "fraction" else x), (" pp" if signed else " %")
        if 0 < abs(v) < 1e-4:
            return f"≈ 0{unit}"
        small = 0 < abs(v) < 0.05  # two significant digits rather than a rounded 0.0
        sign = "+" if signed else ""
        return number(v, f"{sign}.2g" if small else f"{sign}.1f") + unit

    def interval(self) -> str:
        """The value's interval, or why it has none (a fraction of layers is a count, not an estimate)."""
        v = self.value
        if not (math.isfinite(v.low) and math.isfinite(v.high)):
            return "no interval (a count of layers)" if self.key == "key_orthogonality" else "n/a"
        return f"{round(100 * v.confidence)} % CI [{self.formatted(v.low)}, {self.formatted(v.high)}]"

    def contrast_text(self) -> str:
        """Δ against the random-init null with its interval, or why there is none."""
        c = self.contrast
        if c is None:
            return "no random-init null"
        if not (math.isfinite(c.low) and math.isfinite(c.high)):
            return f"{self.formatted(c.value, signed=True)} (no interval: one fresh draw)"
        lo, hi = self.formatted(c.low, signed=True), self.formatted(c.high, signed=True)
        return f"{self.formatted(c.value, signed=True)} [{lo}, {hi}]"


@dataclass(frozen=True, eq=False)
class Scorecard(Record):
    model: str
    criteria: tuple[Criterion, ...]

    def __post_init__(self) -> None:
        keys = [c.key for c in self.criteria]
        if len(set(keys)) != len(keys):
            raise ValueError(f"duplicate criteria in scorecard: {keys}")

    @property
    def n_passed(self) -> int:
        return sum(c.passes for c in self.criteria)

    def rows(self) -> list[dict[str, str]]:
        """The table the report and the CLI print: strings only."""
        out = []
        for c in self.criteria:
            row = {
                "criterion": c.label,
                "statement": c.statement,
                "value": c.formatted(c.value.value),
                "ci": c.interval(),
                "passes": "yes" if c.passes else "no",
                "null": f"{c.null_label}: {c.formatted(c.null_value)}",
                "beats_null": {True: "yes", False: "no", None: "no null"}[c.beats_null],
                "detail": c.detail,
            }
            if c.threshold_met is not None:  # files before issue 37 hold neither
                row["threshold"] = "met" if c.threshold_met else "not met"
                row["vs_init"] = c.contrast_text()
            out.append(row)
        return out


def _verdict(threshold_met: bool, contrast: Estimate | None, direction: int) -> tuple[bool | None, bool]:
    """(beats_null, passes): the null is beaten when the contrast's interval excludes 0 on the claimed
    side (``direction`` +1: above, -1: below); a criterion passes only when both hold."""
    if contrast is None:
        return None, False
    lo, hi = contrast.low, contrast.high
    beats = bool(math.isfinite(lo) and math.isfinite(hi) and (lo > 0 if direction > 0 else hi < 0))
    return beats, bool(threshold_met and beats)


def _null_words(null: InitNull) -> str:
    return "the run's own initialisation" if null.own else f"{null.draws} random-init draws"


def manifold_criterion(
    profile: Any,
    null: InitNull | None = None,
    shares_boot: np.ndarray | None = None,
    shares: tuple[float, float] | None = None,
) -> Criterion:
    """Criterion 1 from a ManifoldProfile (final captured layer); ``shares`` and ``shares_boot`` (B, 2): the
    model's (PC1, PC1+PC2) computed as the null's are (``initnull.pc_shares``), on all prompts and on the
    shared resample indices of ``null``."""
    i = len(profile.layers) - 1
    pc1, pc12, gauss = profile.pc1[i], profile.pc12[i], profile.null[i]
    use_pc1 = pc1.value > PC_THRESHOLD or pc12.value <= PC_THRESHOLD
    stat, band, name = (pc1, gauss.pc1, "PC1") if use_pc1 else (pc12, gauss.pc12, "PC1+PC2")
    met = bool(pc1.value > PC_THRESHOLD or pc12.value > PC_THRESHOLD)
    contrast = None
    if null is not None and shares_boot is not None:
        col = 0 if use_pc1 else 1
        nulls, nboot = (null.pc1, null.pc1_boot) if use_pc1 else (null.pc12, null.pc12_boot)
        b = min(shares_boot.shape[0], nboot.shape[1])
        point = shares[col] if shares is not None else stat.value  # the nulls' own estimator: Δ = 0 for itself
        contrast = null_contrast(
            point, shares_boot[:b, col], nulls, nboot[:, :b], confidence=stat.confidence, own=null.own
        )
    beats, passes = _verdict(met, contrast, +1)
    gaussian = (
        f"{gauss.kind} null {name} upper {round(100 * stat.confidence)} % {band.high:.3f} "
        f"(mean {band.value:.3f}; n={gauss.n}, d={gauss.d}, {gauss.draws} draws; second reference)"
    )
    return Criterion(
        key="value_manifold",
        label="Value manifold (final layer)",
        statement=f"PC1 > {PC_THRESHOLD:.0%} or PC1+PC2 > {PC_THRESHOLD:.0%} of standardised variance",
        value=stat,
        unit="fraction",
        passes=passes,
        null_label=f"{name} at random init" if null is None else f"{name}, {null.label}",
        null_value=None if null is None else float(np.mean(null.pc1 if use_pc1 else null.pc12)),
        beats_null=beats,
        detail=f"layer {profile.layers[i]}: {name} shown; PC1 {pc1.value:.3f}, PC1+PC2 {pc12.value:.3f}; "
        + ("" if null is None else f"paired over prompts against {_null_words(null)}; ")
        + gaussian,
        contrast=contrast,
        threshold_met=met,
    )


def orthogonality_criterion(
    ortho: Any,
    null: InitNull | None = None,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int = 0,
) -> Criterion:
    """Criterion 2 from a KeyOrthogonality result: the fraction of layers under the threshold (a count: no
    interval), its null contrast from ``null.key_cos`` (heads resampled within layers)."""
    per_head = np.asarray(ortho.per_head, dtype=np.float64)  # (L, H); NaN: heads a layer does not have
    layer_mean = head_mean(per_head)
    frac = float(np.mean(layer_mean < ORTHO_THRESHOLD))
    L = per_head.shape[0]
    value = Estimate(frac, math.nan, math.nan, confidence)
    met = frac >= ORTHO_LAYER_FRACTION
    contrast, null_value = None, None
    if null is not None and null.key_cos is not None and null.key_cos.shape[1:] == per_head.shape:
        contrast = head_contrast(
            per_head,
            null.key_cos,
            n_resamples=n_resamples,
            confidence=confidence,
            own=null.own,
            random_state=random_state,
        )
        init_means = np.nanmean(null.key_cos, axis=-1)  # (k, L)
        null_value = float(np.mean(init_means < ORTHO_THRESHOLD))
        below = int((layer_mean < init_means.mean(axis=0)).sum())
        detail = (
            f"mean |cos| {np.nanmean(per_head):.4f} vs {np.nanmean(null.key_cos):.4f} at init "
            f"({_null_words(null)}); lower than at init in {below}/{L} layers; Gaussian {ortho.gaussian:.4f}"
        )
        label = f"{null.label}: layers below {ORTHO_THRESHOLD}"
    else:
        detail = f"mean |cos| {np.nanmean(per_head):.4f} vs Gaussian {ortho.gaussian:.4f}; no random-init null"
        label = "random init: layers below threshold"
    beats, passes = _verdict(met, contrast, -1)
    return Criterion(
        key="key_orthogonality",
        label="Key orthogonality (W_K columns)",
        statement=f"mean |cos| < {ORTHO_THRESHOLD} in ≥ {ORTHO_LAYER_FRACTION:.0%} of layers",
        value=value,
        unit="fraction",
        passes=passes,
        null_label=label,
        null_value=null_value,
        beats_null=beats,
        detail=detail,
        contrast=contrast,
        threshold_met=met,
    )


def focusing_criterion(focus: Any, null: InitNull | None = None, idx: np.ndarray | None = None) -> Criterion:
    """Criterion 3 from an AttentionFocusing result; ``idx``: the shared resample indices of ``null``."""
    from geoprobe.analysis.focusing import entropy_reduction

    r = focus.reduction
    alpha = 1 - r.confidence
    met = bool(r.value > FOCUS_THRESHOLD)
    contrast, null_value = None, None
    if null is not None and idx is not None and math.isfinite(r.value):
        first, last = focus.per_prompt[0], focus.per_prompt[-1]
        nulls = np.array([float(entropy_reduction(f, g)) for f, g in zip(null.entropy_first, null.entropy_last)])
        nboot = np.array([reduction_resampled(f, g, idx) for f, g in zip(null.entropy_first, null.entropy_last)])
        contrast = null_contrast(
            r.value, reduction_resampled(first, last, idx), nulls, nboot, confidence=r.confidence, own=null.own
        )
        null_value = float(nulls.mean())
    beats, passes = _verdict(met, contrast, +1)
    sign_flip = "beats" if (r.low > 0 and focus.reduction_p < alpha) else "does not beat"
    return Criterion(
        key="attention_focusing",
        label="Attention focusing (entropy, first → last layer)",
        statement=f"head-averaged attention entropy falls by > {FOCUS_THRESHOLD:.0f} %",
        value=r,
        unit="percent",
        passes=passes,
        null_label="reduction at random init" if null is None else f"reduction, {null.label}",
        null_value=null_value,
        beats_null=beats,
        detail=f"layers {focus.layers[0]} → {focus.layers[-1]}; "
        + ("" if null is None else f"paired over prompts against {_null_words(null)}; ")
        + f"{sign_flip} 'no reduction' (paired sign-flip test, one-sided p = {focus.reduction_p:.2g}; "
        + "second reference)",
        contrast=contrast,
        threshold_met=met,
    )


def build_scorecard(
    model: str,
    manifold: Any = None,
    orthogonality: Any = None,
    focusing: Any = None,
    *,
    null: InitNull | None = None,
    shares_boot: np.ndarray | None = None,
    shares: tuple[float, float] | None = None,
    idx: np.ndarray | None = None,
    **kw: Any,
) -> Scorecard:
    crit = []
    if manifold is not None:
        crit.append(manifold_criterion(manifold, null, shares_boot, shares))
    if orthogonality is not None:
        crit.append(orthogonality_criterion(orthogonality, null, **kw))
    if focusing is not None:
        crit.append(focusing_criterion(focusing, null, idx))
    return Scorecard(model=model, criteria=tuple(crit))
