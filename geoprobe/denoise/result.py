"""The denoising result: MSEs with bootstrap CIs against the oracle, learned-weight structure, sweeps over the
context length and the subspace dimension, the warped-geometry run and the energy view, with figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from geoprobe.analysis.stats import Estimate
from geoprobe.denoise import report
from geoprobe.denoise.landscape import DescentComparison, EnergyLandscape
from geoprobe.report.page import Figure, Page, Section
from geoprobe.results import Result
from geoprobe.serial import Record, decode

#: the issue's target: trained softmax attention's MSE at most this multiple of the oracle (Bayes) MSE
TARGET_RATIO = 1.05


@dataclass(frozen=True, eq=False)
class Score(Record):
    """One method's MSE per coordinate (mean over prompts, bootstrap CI) and its paired ratio to the oracle."""

    method: str
    mse: Estimate
    ratio: Estimate | None = None


@dataclass(frozen=True, eq=False)
class Block(Record):
    """Scores at one setting of a sweep (``key`` = the context length L or the test dimension d')."""

    key: int
    scores: tuple[Score, ...]

    def __post_init__(self) -> None:
        if not self.scores:
            raise ValueError(f"block {self.key} has no scores")

    def get(self, method: str) -> Score:
        for s in self.scores:
            if s.method == method:
                return s
        raise KeyError(method)


@dataclass(frozen=True, eq=False)
class Fit(Record):
    """A learned matrix against a predicted structure S: W ≈ c·S (least squares), residual ‖W − cS‖_F/‖W‖_F."""

    model: str
    matrix: str  # W_KQ | W_PV | W_PV·W_KQ
    structure: str  # "I" or "(AAᵀ)⁻¹"
    c: float
    residual: float
    predicted: float | None = None  # the predicted c (None where we have no prediction)


@dataclass(frozen=True, eq=False)
class DenoiseResult(Result, Page):
    """Everything ``geoprobe denoise`` measured on one task."""

    KIND: ClassVar[str] = "geoprobe.denoise"
    FILE: ClassVar[str] = "denoise.json"
    PAGE: ClassVar[str | None] = "denoise.html"
    WHAT: ClassVar[str] = "denoising results file"
    FIX: ClassVar[str] = "pass the denoise.json that 'geoprobe denoise' wrote, or re-run it"

    task: dict[str, Any]
    config: dict[str, Any]
    scores: tuple[Score, ...]  # at the training context length, on n_eval prompts
    fits: tuple[Fit, ...]
    lengths: tuple[Block, ...] = ()  # MSE vs L (models trained at the task's L)
    transfer: tuple[Block, ...] = ()  # MSE at test dimension d' (models trained at d)
    warp: dict[str, Any] | None = None  # {"condition", "matrix", "scores", "fits", "matrices"}
    energy: dict[str, Any] | None = None
    matrices: dict[str, dict[str, list[list[float]]]] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_body(cls, d: dict[str, Any]) -> "DenoiseResult":  # warp is a plain dict holding Scores and Fits
        values = cls.field_values(d)
        warp = values.get("warp")
        if warp is not None:
            values["warp"] = {
                **warp,
                "scores": decode(tuple[Score, ...], warp["scores"]),
                "fits": decode(tuple[Fit, ...], warp["fits"]),
            }
        return cls(**values)

    def __post_init__(self) -> None:
        if self.task.get("name") not in ("linear", "mixture", "sphere"):
            raise ValueError(f"unknown task {self.task.get('name')!r}")
        methods = [s.method for s in self.scores]
        if "oracle" not in methods:
            raise ValueError("a denoising result needs the oracle (Bayes) score")
        if len(set(methods)) != len(methods):
            raise ValueError(f"duplicate methods {methods}")
        for b in self.lengths + self.transfer:
            if "oracle" not in [s.method for s in b.scores]:
                raise ValueError(f"sweep block {b.key} has no oracle score")

    @property
    def name(self) -> str:
        return self.task["name"]

    def score(self, method: str) -> Score:
        for s in self.scores:
            if s.method == method:
                return s
        raise KeyError(f"no score for {method!r}; have {[s.method for s in self.scores]}")

    def checks(self) -> list[dict[str, Any]]:
        """The issue's target: trained softmax attention within 1.05× of the oracle MSE (point estimate; the CI
        of the paired ratio is reported beside it)."""
        rows = []
        for method in ("softmax", "linear"):
            try:
                r = self.score(method).ratio
            except KeyError:
                continue
            if r is None:
                continue
            rows.append(
                {
                    "check": f"{method} attention MSE / Bayes MSE ≤",
                    "target": TARGET_RATIO,
                    "measured": r.value,
                    "ci": f"[{r.low:.4f}, {r.high:.4f}]",
                    "pass": r.value <= TARGET_RATIO,
                    "required": method == "softmax",
                }
            )
        return rows

    # -- page -------------------------------------------------------------------------------
    def title(self) -> str:
        return f"In-context denoising: {self.name} task"

    def subtitle(self) -> str:
        return report.subtitle(self)

    def sections(self) -> list[Section]:
        return report.sections(self)

    # -- figures -------------------------------------------------------------------------------
    def figure(self) -> Any:
        """The main figure: MSE vs context length (oracle floor dashed); the bar chart of scores without a sweep."""
        return self.lengths_figure() if self.lengths else self.scores_figure()

    def scores_figure(self) -> Any:
        import plotly.graph_objects as go

        s = self.scores
        fig = go.Figure(
            go.Bar(
                x=[x.method for x in s],
                y=[x.mse.value for x in s],
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=[x.mse.high - x.mse.value for x in s],
                    arrayminus=[x.mse.value - x.mse.low for x in s],
                ),
            )
        )
        fig.update_layout(
            title=f"{self.name}: MSE per coordinate (95 % bootstrap CI)",
            yaxis_type="log",
            yaxis_title="MSE per coordinate",
            template="plotly_white",
        )
        return fig

    def _sweep_figure(self, blocks: tuple[Block, ...], xlabel: str, title: str, log_x: bool) -> Any:
        import plotly.graph_objects as go

        fig = go.Figure()
        x = [b.key for b in blocks]
        for method in [s.method for s in blocks[0].scores]:
            ys = [b.get(method).mse for b in blocks]
            dash = "dash" if method == "oracle" else None
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=[e.value for e in ys],
                    name=method,
                    mode="lines+markers",
                    line=dict(dash=dash, color="black" if method == "oracle" else None),
                    error_y=dict(
                        type="data",
                        symmetric=False,
                        array=[e.high - e.value for e in ys],
                        arrayminus=[e.value - e.low for e in ys],
                    ),
                )
            )
        fig.update_layout(title=title, xaxis_title=xlabel, yaxis_title="MSE per coordinate", template="plotly_white")
        if log_x:
            fig.update_xaxes(type="log")
        return fig

    def lengths_figure(self) -> Any:
        return self._sweep_figure(
            self.lengths,
            "context length L",
            f"{self.name}: MSE vs context length "
            f"(models trained at L = {self.task['context_length']}; dashed: oracle Bayes)",
            True,
        )

    def transfer_figure(self) -> Any:
        return self._sweep_figure(
            self.transfer,
            "test subspace dimension d'",
            f"{self.name}: dimension transfer (models trained at d = {self.task['d']}; dashed: oracle Bayes at d')",
            False,
        )

    def weights_figure(self) -> Any:
        """Heatmaps of the learned W_KQ and W_PV of each model."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        panels = [(m, k) for m, mats in self.matrices.items() for k in ("W_KQ", "W_PV") if k in mats]
        fig = make_subplots(rows=1, cols=max(1, len(panels)), subplot_titles=[f"{m}: {k}" for m, k in panels])
        for i, (m, k) in enumerate(panels, start=1):
            W = self.matrices[m][k]
            vmax = max(abs(v) for row in W for v in row) or 1.0
            fig.add_trace(
                go.Heatmap(
                    z=W, zmin=-vmax, zmax=vmax, colorscale="RdBu", reversescale=True, showscale=i == len(panels)
                ),
                row=1,
                col=i,
            )
            fig.update_yaxes(autorange="reversed", row=1, col=i)
        fig.update_layout(title=f"{self.name}: learned matrices", template="plotly_white")
        return fig

    def training_figure(self) -> Any:
        import plotly.graph_objects as go

        fig = go.Figure()
        for name, log in self.training.items():
            curve = log.get("loss_curve") or []
            if curve:
                step = max(1, int(log["steps"]) // max(1, len(curve)))
                fig.add_trace(
                    go.Scatter(x=[step * (i + 1) for i in range(len(curve))], y=curve, name=name, mode="lines+markers")
                )
        oracle = self.score("oracle").mse.value
        fig.add_hline(y=oracle, line_dash="dash", annotation_text="oracle (Bayes) MSE")
        fig.update_layout(
            title=f"{self.name}: training loss (mean over blocks of steps)",
            yaxis_type="log",
            xaxis_title="step",
            yaxis_title="MSE per coordinate",
            template="plotly_white",
        )
        return fig

    def figures(self) -> list[Figure]:
        """The page's figures in order (the same list ``--figures`` exports)."""
        out = [
            Figure("scores", report.CAPTIONS["scores"], self.scores_figure()),
            Figure("training", report.CAPTIONS["training"], self.training_figure()),
        ]
        if self.lengths:
            out.append(Figure("lengths", report.CAPTIONS["lengths"], self.lengths_figure()))
        if self.transfer:
            out.append(Figure("transfer", report.CAPTIONS["transfer"], self.transfer_figure()))
        if self.matrices:
            out.append(Figure("weights", report.CAPTIONS["weights"], self.weights_figure()))
        if self.energy:
            marks = {k: tuple(v) for k, v in self.energy.get("marks", {}).items()}
            out += [
                Figure(
                    "energy",
                    report.CAPTIONS["energy"],
                    EnergyLandscape.from_dict(self.energy["landscape"]).figure(marks=marks),
                ),
                Figure(
                    "descent", report.CAPTIONS["descent"], DescentComparison.from_dict(self.energy["descent"]).figure()
                ),
            ]
        return out


__all__ = ["Block", "DenoiseResult", "Fit", "Score", "TARGET_RATIO"]
