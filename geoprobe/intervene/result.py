"""InterventionResult: what one ``geoprobe intervene`` sweep measured, with persistence and its figure."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from geoprobe.analysis.stats import Estimate
from geoprobe.intervene import report
from geoprobe.intervene.verdict import CalibrationVerdict
from geoprobe.report.page import Figure, Page, Section
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

    # -- page -------------------------------------------------------------------------------
    def title(self) -> str:
        return f"Entropy-axis interventions: {self.model}"

    def subtitle(self) -> str:
        return report.subtitle(self)

    def sections(self) -> list[Section]:
        return report.sections(self)

    def figures(self) -> list[Figure]:
        return [Figure("dose-response", report.CAPTION, self.figure())]

    def figure(self) -> Any:
        """Dose–response: each metric against strength, entropy axis (CI) vs random axes (mean ± sd)."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        shown = ("axis_entropy_rho", "sula_mae", "kl", "delta_entropy", "top1_agreement", "perplexity_ratio")
        fig = make_subplots(rows=2, cols=3, subplot_titles=shown)
        palette = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e")
        exps = list(dict.fromkeys(r.layers for r in self.rows))
        for j, m in enumerate(shown):
            row, col = j // 3 + 1, j % 3 + 1
            for i, layers in enumerate(exps):
                color, label = palette[i % len(palette)], f"layers {','.join(map(str, layers))}"
                true = sorted(
                    (r for r in self.rows if r.layers == layers and r.axis == "entropy"), key=lambda r: r.strength
                )
                x = [r.strength for r in true]
                y = np.array([r.metrics[m].value for r in true])
                fig.add_trace(
                    go.Scatter(
                        x=x,
                        y=y,
                        mode="lines+markers",
                        name=f"{label}: entropy axis",
                        legendgroup=label,
                        showlegend=j == 0,
                        line=dict(color=color),
                        error_y=dict(
                            type="data",
                            symmetric=False,
                            array=np.array([r.metrics[m].high for r in true]) - y,
                            arrayminus=y - np.array([r.metrics[m].low for r in true]),
                        ),
                    ),
                    row=row,
                    col=col,
                )
                means, sds = [], []
                for s in x:
                    xs = np.array(
                        [
                            r.metrics[m].value
                            for r in self.rows
                            if r.layers == layers and r.strength == s and r.axis != "entropy"
                        ]
                    )
                    xs = xs[np.isfinite(xs)]
                    means.append(xs.mean() if xs.size else math.nan)
                    sds.append(xs.std(ddof=1) if xs.size > 1 else 0.0)
                fig.add_trace(
                    go.Scatter(
                        x=x,
                        y=means,
                        mode="lines+markers",
                        name=f"{label}: random axes",
                        legendgroup=label,
                        showlegend=j == 0,
                        line=dict(color=color, dash="dot"),
                        error_y=dict(type="data", array=sds),
                    ),
                    row=row,
                    col=col,
                )
        fig.update_xaxes(title_text="strength")
        fig.update_layout(
            title=dict(text=f"{self.model}: {self.op} along the entropy axis vs random axes"),
            template="plotly_white",
            height=640,
        )
        return fig


def base_key(metric: str, layers: tuple[int, ...]) -> str:
    if metric == "axis_entropy_rho":
        return f"axis_entropy_rho@{max(layers)}"
    return metric


def _unperturbed(e: Estimate | None) -> str:
    return "n/a" if e is None else f"{e:.4g}"
