"""SulaResult: everything one SULA run measured, with provenance and persistence (its page and
figures: :mod:`geoprobe.sula.report`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from jaxtyping import Bool

from geoprobe.report.page import Page
from geoprobe.results import Result
from geoprobe.serial import Record
from geoprobe.sula.config import CONDITIONS, SulaConfig
from geoprobe.sula.evaluate import POSTERIOR, PREDICTIVE, TARGETS, SulaMetrics
from geoprobe.sula.geometry import SulaGeometry
from geoprobe.sula.task import LabelTokens

_ARRAYS = (
    "k",
    "n1",
    "n2",
    "bayes_predictive",
    "bayes_entropy",
    "model_predictive",
    "model_entropy",
    "label_mass",
    "pc1",
)
_INT_ARRAYS = ("k", "n1", "n2")


def _frozen(a: Any, n: int | None, name: str, dtype: Any) -> np.ndarray:
    out = np.array(a, dtype=dtype)
    if out.ndim != 1 or (n is not None and out.shape[0] != n):
        raise ValueError(f"{name} has shape {out.shape}, expected ({n},)")
    if out.dtype.kind == "f" and not np.all(np.isfinite(out)):
        raise ValueError(f"{name} contains NaN or Inf")
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class SulaCondition(Record):
    """One condition's prompts (as per-prompt arrays), model outputs, metrics and geometry.
    ``pc1`` is the oriented PC1 coordinate in the run's shared basis.

    Two analytic targets (docs/sula.md): ``bayes_entropy`` is the **predictive entropy**
    h(a p + (1 − a)(1 − p)) and ``metrics`` scores the model against it; ``posterior_entropy``
    is the **posterior entropy** h(p), p = P(y = L1 | examples), the paper's H_Bayes, and
    ``posterior_metrics`` scores the model against it. Files from 0.1.0 hold only the first
    (the posterior fields are None)."""

    condition: str
    labels: LabelTokens
    prompts_hash: str
    k: np.ndarray
    n1: np.ndarray
    n2: np.ndarray
    bayes_predictive: np.ndarray
    bayes_entropy: np.ndarray
    model_predictive: np.ndarray
    model_entropy: np.ndarray
    label_mass: np.ndarray
    pc1: np.ndarray
    metrics: SulaMetrics
    geometry: SulaGeometry
    posterior_entropy: np.ndarray | None = field(default=None, metadata={"omit_none": True})
    posterior_metrics: SulaMetrics | None = field(default=None, metadata={"omit_none": True})
    low_mass: Bool[np.ndarray, " n"] | None = field(default=None, metadata={"omit_none": True})
    flagged: bool | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        if self.condition not in CONDITIONS:
            raise ValueError(f"condition {self.condition!r} is not one of {CONDITIONS}")
        n = len(np.asarray(self.k))
        if self.low_mass is not None:
            low = np.array(self.low_mass, dtype=bool)
            if low.shape != (n,):
                raise ValueError(f"low_mass has shape {low.shape}, expected ({n},)")
            low.setflags(write=False)
            object.__setattr__(self, "low_mass", low)
            for m in (self.metrics, self.posterior_metrics):
                if m is not None and (m.n, m.n_excluded) != (n - int(low.sum()), int(low.sum())):
                    raise ValueError(
                        f"metrics over {m.n} prompts ({m.n_excluded} left out) but {int(low.sum())} of {n} "
                        "prompts have a low label mass"
                    )
        for name in _ARRAYS:
            object.__setattr__(
                self, name, _frozen(getattr(self, name), n, name, np.int64 if name in _INT_ARRAYS else np.float64)
            )
        if self.posterior_entropy is not None:
            object.__setattr__(
                self, "posterior_entropy", _frozen(self.posterior_entropy, n, "posterior_entropy", np.float64)
            )
        for m in (self.metrics, self.posterior_metrics):
            if m is not None and m.n + (m.n_excluded or 0) != n:
                raise ValueError(f"metrics over {m.n} + {m.n_excluded or 0} left-out prompts, arrays over {n}")
        if np.any(self.n1 + self.n2 != self.k):
            raise ValueError("n1 + n2 must equal k for every prompt")

    @property
    def n(self) -> int:
        return int(self.k.shape[0])

    @property
    def scored(self) -> np.ndarray:
        """Per prompt: scored in the calibration metrics (label mass at or above the threshold;
        every prompt in files from before the threshold)."""
        return np.ones(self.n, dtype=bool) if self.low_mass is None else ~self.low_mass

    @property
    def predictive_entropy(self) -> np.ndarray:
        """The analytic predictive entropy per prompt (stored as ``bayes_entropy``)."""
        return self.bayes_entropy

    def target(self, name: str) -> tuple[np.ndarray | None, SulaMetrics | None]:
        """(analytic entropy per prompt, metrics) for ``"predictive entropy"`` or ``"posterior entropy"``."""
        if name == PREDICTIVE:
            return self.bayes_entropy, self.metrics
        if name == POSTERIOR:
            return self.posterior_entropy, self.posterior_metrics
        raise ValueError(f"target {name!r} is not one of {TARGETS}")


@dataclass(frozen=True, eq=False)
class SulaResult(Result, Page):
    """A SULA run: the main condition and the controls, in one shared PCA basis at ``layer``."""

    KIND: ClassVar[str] = "geoprobe.sula"
    FILE: ClassVar[str] = "sula.json"
    PAGE: ClassVar[str | None] = "sula.html"
    WHAT: ClassVar[str] = "SULA results file"
    FIX: ClassVar[str] = "pass the sula.json that run_sula / geoprobe sula wrote, or re-run the SULA task"

    model: str
    provenance: dict[str, Any]
    config: SulaConfig
    layer: int
    pc1_ratio: float  # explained-variance ratio of the shared basis's PC1 (main prompts)
    timings: dict[str, float] = field(default_factory=dict, kw_only=True)
    conditions: dict[str, SulaCondition]

    def __post_init__(self) -> None:
        if "main" not in self.conditions:
            raise ValueError(f"a SULA result needs the main condition, got {sorted(self.conditions)}")
        for name, c in self.conditions.items():
            if c.condition != name:
                raise ValueError(f"condition stored as {name!r} says it is {c.condition!r}")
        order = [c for c in CONDITIONS if c in self.conditions]
        object.__setattr__(self, "conditions", {c: self.conditions[c] for c in order})
        tau = self.config.min_label_mass
        for name, c in self.conditions.items():
            if tau is None:
                if c.low_mass is not None or c.flagged is not None:
                    raise ValueError(f"condition {name!r} has label-mass flags but the config has no min_label_mass")
            elif c.low_mass is None or c.flagged is None:
                raise ValueError(f"condition {name!r} lacks the label-mass flags of min_label_mass {tau}")
            elif not np.array_equal(c.low_mass, c.label_mass < tau) or c.flagged != bool(c.label_mass.mean() < tau):
                raise ValueError(f"condition {name!r}: its label-mass flags disagree with min_label_mass {tau}")

    @property
    def flagged(self) -> tuple[str, ...]:
        """The conditions whose mean label mass is below ``config.min_label_mass``: left out of the
        headline comparison (none in files from before the threshold)."""
        return tuple(name for name, c in self.conditions.items() if c.flagged)

    @property
    def main(self) -> SulaCondition:
        return self.conditions["main"]

    @property
    def metrics(self) -> SulaMetrics:
        return self.main.metrics

    def summary(self) -> dict[str, dict[str, float]]:
        """Point estimates per condition: MAE (bits), ρ(Ĥ, H), label mass, ρ(PC1, H), ρ(k, PC1)
        against the predictive entropy, and (``*_posterior``, NaN in files from 0.1.0) against
        the posterior entropy, the paper's target; ``n_scored`` prompts (label mass at or above
        the threshold) and ``flagged`` (1.0 when the condition's mean label mass is below it; NaN
        in files from before the threshold). ``rho_k_pc1_prompts`` is ρ_S(k, PC1) across prompts and
        ``rho_k_pc1_contrast`` main's minus this condition's (NaN for main, and in files from before
        issue 37); ``rho_k_pc1`` and ``r_k_pc1`` are over the per-k means (not reported: ±1 whenever
        the means are monotone)."""
        nan = float("nan")

        def v(e: Any) -> float:
            return nan if e is None else e.value

        out = {}
        for name, c in self.conditions.items():
            pm, g = c.posterior_metrics, c.geometry
            kt, kc = g.k_tracking, g.k_contrast
            out[name] = {
                "mae_bits": c.metrics.mae.value,
                "spearman": c.metrics.spearman.value,
                "label_mass": c.metrics.label_mass.value,
                "rho_pc1_bayes": g.rho_pc1_bayes.value,
                "rho_k_pc1": g.rho_k_pc1.value,
                "r_k_pc1": g.r_k_pc1.value,
                "mae_bits_posterior": v(None if pm is None else pm.mae),
                "pearson": c.metrics.pearson.value,
                "pearson_posterior": v(None if pm is None else pm.pearson),
                "rho_pc1_posterior": v(g.rho_pc1_posterior),
                "r_pc1_bayes": v(g.r_pc1_bayes),
                "r_pc1_posterior": v(g.r_pc1_posterior),
                "n_scored": float(c.metrics.n),
                "flagged": nan if c.flagged is None else float(c.flagged),
                "rho_k_pc1_prompts": v(None if kt is None else kt.rho),
                "rho_k_pc1_contrast": v(None if kc is None else kc.difference),
            }
        return out

    def targets(self) -> tuple[str, ...]:
        """The analytic targets this result holds: the posterior entropy (the paper's) first, when present."""
        return (POSTERIOR, PREDICTIVE) if self.main.posterior_metrics is not None else (PREDICTIVE,)
