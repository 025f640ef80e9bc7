"""The paper's three criteria (arXiv 2512.23752 §4.4), each with its value, CI and matched null.

1. **Value manifold**: PC1 > 30 % or PC1+PC2 > 30 % of the standardised variance of the final
   captured layer's value vectors. Null: PCA of the same n × d data with every coordinate
   permuted across prompts (or Gaussian n × d): it beats the null when the statistic that
   passes (PC1, else PC1+PC2) exceeds the null's upper percentile.
2. **Key orthogonality**: mean off-diagonal |cos| of W_K columns < 0.20 in at least 50 % of
   layers. Null: the architecture's own random initialisation (or, without it, the Gaussian
   expectation). Random Gaussian columns in d_model dimensions already have |cos| ≈
   √(2/(π·d_model)) ≪ 0.20, so passing the threshold alone says little; it beats the null when
   trained keys are more orthogonal than initialised ones in at least half of the layers.
3. **Attention focusing**: the head-averaged attention entropy of the final token falls by
   more than 30 % from the first to the last captured layer. Null: no reduction (paired
   sign-flip test over prompts); it beats the null when the CI excludes 0 and p < 1 − confidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from geoprobe.analysis.orthogonality import head_mean
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

    def __post_init__(self) -> None:
        if self.key not in ("value_manifold", "key_orthogonality", "attention_focusing"):
            raise ValueError(f"unknown criterion {self.key!r}")
        if self.unit not in ("fraction", "percent"):
            raise ValueError(f"unknown unit {self.unit!r}")

    def formatted(self, x: float | None) -> str:
        if x is None or not np.isfinite(x):
            return "n/a"
        return f"{100 * x:.1f} %" if self.unit == "fraction" else f"{x:.1f} %"


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
            v = c.value
            ci = f"[{c.formatted(v.low)}, {c.formatted(v.high)}]"
            out.append(
                {
                    "criterion": c.label,
                    "statement": c.statement,
                    "value": c.formatted(v.value),
                    "ci": f"{round(100 * v.confidence)} % CI {ci}",
                    "passes": "yes" if c.passes else "no",
                    "null": f"{c.null_label}: {c.formatted(c.null_value)}",
                    "beats_null": {True: "yes", False: "no", None: "n/a"}[c.beats_null],
                    "detail": c.detail,
                }
            )
        return out


def manifold_criterion(profile: Any) -> Criterion:
    """Criterion 1 from a ManifoldProfile (final captured layer)."""
    i = len(profile.layers) - 1
    pc1, pc12, null = profile.pc1[i], profile.pc12[i], profile.null[i]
    use_pc1 = pc1.value > PC_THRESHOLD or pc12.value <= PC_THRESHOLD
    stat, band, name = (pc1, null.pc1, "PC1") if use_pc1 else (pc12, null.pc12, "PC1+PC2")
    return Criterion(
        key="value_manifold",
        label="Value manifold (final layer)",
        statement=f"PC1 > {PC_THRESHOLD:.0%} or PC1+PC2 > {PC_THRESHOLD:.0%} of standardised variance",
        value=stat,
        unit="fraction",
        passes=bool(pc1.value > PC_THRESHOLD or pc12.value > PC_THRESHOLD),
        null_label=f"{null.kind} null {name}, upper {round(100 * stat.confidence)} %",
        null_value=float(band.high),
        beats_null=bool(stat.value > band.high),
        detail=f"layer {profile.layers[i]}: {name} shown; PC1 {pc1.value:.3f}, PC1+PC2 {pc12.value:.3f}; "
        f"null mean {band.value:.3f} (n={null.n}, d={null.d}, {null.draws} draws)",
    )


def orthogonality_criterion(
    ortho: Any, *, n_resamples: int = 1000, confidence: float = 0.95, random_state: int = 0
) -> Criterion:
    """Criterion 2 from a KeyOrthogonality result; CI by resampling heads within each layer."""
    per_head = np.asarray(ortho.per_head, dtype=np.float64)  # (L, H); NaN: heads a layer does not have
    frac = float(np.mean(head_mean(per_head) < ORTHO_THRESHOLD))
    rng = np.random.default_rng(random_state)
    L, H = per_head.shape
    if not np.isnan(per_head).any():
        idx = rng.integers(0, H, size=(n_resamples, H))
        boot = (per_head[:, idx].mean(-1) < ORTHO_THRESHOLD).mean(0)  # (n_resamples,)
    else:  # layers with their own head counts: resample each layer's own heads
        own = [row[~np.isnan(row)] for row in per_head]
        boot = np.mean(
            [(h[rng.integers(0, len(h), size=(n_resamples, len(h)))].mean(-1) < ORTHO_THRESHOLD) for h in own], axis=0
        )
    alpha = (1 - confidence) / 2
    value = Estimate(frac, float(np.quantile(boot, alpha)), float(np.quantile(boot, 1 - alpha)), confidence)
    if ortho.init_per_head is not None:
        init = np.asarray(ortho.init_per_head, dtype=np.float64)
        more_orthogonal = head_mean(per_head) < head_mean(init)
        null_label, null_value = (
            f"{ortho.init_label or 'random init'}: layers below {ORTHO_THRESHOLD}",
            float(np.mean(head_mean(init) < ORTHO_THRESHOLD)),
        )
        beats = bool(more_orthogonal.mean() >= ORTHO_LAYER_FRACTION)
        detail = (
            f"trained keys more orthogonal than the init in {int(more_orthogonal.sum())}/{L} layers; "
            f"mean |cos| {np.nanmean(per_head):.3f} vs init {np.nanmean(init):.3f}, Gaussian {ortho.gaussian:.3f}"
        )
    else:
        null_label, null_value = "Gaussian: layers below threshold", 1.0 if ortho.gaussian < ORTHO_THRESHOLD else 0.0
        beats = bool(np.mean(head_mean(per_head) < ortho.gaussian) >= ORTHO_LAYER_FRACTION)
        detail = f"mean |cos| {np.nanmean(per_head):.3f} vs Gaussian {ortho.gaussian:.3f} (no init baseline)"
    return Criterion(
        key="key_orthogonality",
        label="Key orthogonality (W_K columns)",
        statement=f"mean |cos| < {ORTHO_THRESHOLD} in ≥ {ORTHO_LAYER_FRACTION:.0%} of layers",
        value=value,
        unit="fraction",
        passes=frac >= ORTHO_LAYER_FRACTION,
        null_label=null_label,
        null_value=null_value,
        beats_null=beats,
        detail=detail,
    )


def focusing_criterion(focus: Any) -> Criterion:
    """Criterion 3 from an AttentionFocusing result."""
    r = focus.reduction
    alpha = 1 - r.confidence
    return Criterion(
        key="attention_focusing",
        label="Attention focusing (entropy, first → last layer)",
        statement=f"head-averaged attention entropy falls by > {FOCUS_THRESHOLD:.0f} %",
        value=r,
        unit="percent",
        passes=bool(r.value > FOCUS_THRESHOLD),
        null_label="no reduction (paired sign-flip test)",
        null_value=0.0,
        beats_null=bool(r.low > 0 and focus.reduction_p < alpha),
        detail=f"layers {focus.layers[0]} → {focus.layers[-1]}; one-sided p = {focus.reduction_p:.2g}",
    )


def build_scorecard(
    model: str, manifold: Any = None, orthogonality: Any = None, focusing: Any = None, **kw: Any
) -> Scorecard:
    crit = []
    if manifold is not None:
        crit.append(manifold_criterion(manifold))
    if orthogonality is not None:
        crit.append(orthogonality_criterion(orthogonality, **kw))
    if focusing is not None:
        crit.append(focusing_criterion(focusing))
    return Scorecard(model=model, criteria=tuple(crit))
