"""InterventionResult: what one ``geoprobe intervene`` sweep measured, with persistence (its page and
figure: :mod:`geoprobe.intervene.report`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from geoprobe.analysis.stats import Estimate
from geoprobe.intervene.verdict import CalibrationVerdict
from geoprobe.report.page import Page
from geoprobe.results import Result
from geoprobe.serial import Record

METRICS = (
    "axis_entropy_rho",
    "sula_mae",
    "sula_mae_posterior",
    "sula_spearman",
    "delta_entropy",
    "kl",
    "top1_agreement",
    "perplexity_ratio",
)


@dataclass(frozen=True, eq=False)
class InterventionRow(Record):
    """One edit: the layers edited together, the strength, the axis (``entropy`` or a random seed)."""

    layers: tuple[int, ...]
    strength: float
    axis: str  # "entropy" or "random-<i>"
    metrics: dict[str, Estimate]


@dataclass(frozen=True, eq=False)
class InterventionResult(Result, Page):
    """An intervention sweep: per experiment, strength and axis (entropy or random control), the
    effects, and per experiment and strength the calibration verdict for both SULA targets
    (``verdicts``; absent in files from 0.1.0, which hold ``sula_mae`` against the predictive
    entropy only)."""

    KIND: ClassVar[str] = "geoprobe.intervene"
    FILE: ClassVar[str] = "intervene.json"
    PAGE: ClassVar[str | None] = "intervene.html"
    WHAT: ClassVar[str] = "intervention results file"
    FIX: ClassVar[str] = "pass the intervene.json that geoprobe intervene wrote (or re-run it)"

    model: str
    provenance: dict[str, Any]
    config: dict[str, Any]
    op: str
    baseline: dict[str, Estimate]  # SULA MAE/ρ and the axis–entropy ρ of every axis layer, unperturbed
    axes: dict[int, dict[str, float]]  # per layer: PC1 share of the calibration values, |ρ(axis, entropy)|
    rows: tuple[InterventionRow, ...]
    timings: dict[str, float] = field(default_factory=dict)
    verdicts: tuple[CalibrationVerdict, ...] | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        if not self.rows:
            raise ValueError("an intervention result needs rows")
        if not any(r.axis == "entropy" for r in self.rows) or not any(r.axis.startswith("random") for r in self.rows):
            raise ValueError("rows must hold the entropy axis and random-axis controls")
        if self.verdicts is not None:
            object.__setattr__(self, "verdicts", tuple(self.verdicts))
            if sum(v.headline for v in self.verdicts) != 1:
                raise ValueError("exactly one verdict must be the headline")

    @property
    def verdict(self) -> CalibrationVerdict | None:
        """The verdict the report leads with (the multi-layer edit at its strongest); None in 0.1.0 files."""
        return None if self.verdicts is None else next(v for v in self.verdicts if v.headline)

    def experiments(self) -> list[tuple[tuple[int, ...], float]]:
        return list(dict.fromkeys((r.layers, r.strength) for r in self.rows))

    def summary(self) -> list[dict[str, Any]]:
        """Per experiment and strength: each metric's entropy-axis value [CI] and the controls' mean ± sd."""
        out = []
        for layers, s in self.experiments():
            true = next(r for r in self.rows if (r.layers, r.strength, r.axis) == (layers, s, "entropy"))
            ctrl = [r for r in self.rows if (r.layers, r.strength) == (layers, s) and r.axis != "entropy"]
            for m in METRICS:
                if m not in true.metrics:  # sula_mae_posterior: not in files from 0.1.0
                    continue
                e = true.metrics[m]
                xs = np.array([c.metrics[m].value for c in ctrl], dtype=np.float64)
                xs = xs[np.isfinite(xs)]
                out.append(
                    {
                        "layers": ",".join(map(str, layers)),
                        "strength": s,
                        "metric": m,
                        "entropy axis": f"{e:.4g}",
                        "random axes mean ± sd": "n/a"
                        if xs.size == 0
                        else f"{xs.mean():.4g} ± {xs.std(ddof=1) if xs.size > 1 else 0:.2g}",
                        "unperturbed": _unperturbed(self.baseline.get(base_key(m, layers))),
                    }
                )
        return out


def base_key(metric: str, layers: tuple[int, ...]) -> str:
    if metric == "axis_entropy_rho":
        return f"axis_entropy_rho@{max(layers)}"
    return metric


def _unperturbed(e: Estimate | None) -> str:
    return "n/a" if e is None else f"{e:.4g}"
