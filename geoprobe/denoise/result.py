"""The denoising result: MSEs with bootstrap CIs against the oracle, learned-weight structure, sweeps over the
context length and the subspace dimension, the warped-geometry run and the energy view, with figures."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geoprobe.analysis.stats import Estimate, from_json_float, json_float
from geoprobe.errors import ResultsError
from geoprobe.paths import JsonResult

RESULTS_KIND = "geoprobe.denoise"
RESULTS_VERSION = 1
#: the issue's target: trained softmax attention's MSE at most this multiple of the oracle (Bayes) MSE
TARGET_RATIO = 1.05


@dataclass(frozen=True)
class Score:
    """One method's MSE per coordinate (mean over prompts, bootstrap CI) and its paired ratio to the oracle."""

    method: str
    mse: Estimate
    ratio: Estimate | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "mse": self.mse.to_dict(), "ratio": self.ratio.to_dict() if self.ratio else None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Score":
        return cls(str(d["method"]), Estimate.from_dict(d["mse"]), Estimate.from_dict(d["ratio"]) if d.get("ratio") else None)


@dataclass(frozen=True)
class Block:
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

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "scores": [s.to_dict() for s in self.scores]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Block":
        return cls(int(d["key"]), tuple(Score.from_dict(s) for s in d["scores"]))


@dataclass(frozen=True)
class Fit:
    """A learned matrix against a predicted structure S: W ≈ c·S (least squares), residual ‖W − cS‖_F/‖W‖_F."""

    model: str
    matrix: str  # W_KQ | W_PV | W_PV·W_KQ
    structure: str  # "I" or "(AAᵀ)⁻¹"
    c: float
    residual: float
    predicted: float | None = None  # the predicted c (None where we have no prediction)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "matrix": self.matrix, "structure": self.structure, "c": json_float(self.c),
                "residual": json_float(self.residual), "predicted": self.predicted}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Fit":
        return cls(str(d["model"]), str(d["matrix"]), str(d["structure"]), from_json_float(d["c"]),
                   from_json_float(d["residual"]), None if d.get("predicted") is None else float(d["predicted"]))


def _scores(x: Any) -> tuple[Score, ...]:
    return tuple(Score.from_dict(s) for s in x)


@dataclass(frozen=True, eq=False)
class DenoiseResult(JsonResult):
    """Everything ``geoprobe denoise`` measured on one task."""

    _file = "denoise.json"
    _page = "denoise.html"
    _what = "denoising results file"
    _fix = "pass the denoise.json that 'geoprobe denoise' wrote"

    task: dict[str, Any]
    config: dict[str, Any]
    scores: tuple[Score, ...]  # at the training context length, on n_eval prompts
    fits: tuple[Fit, ...]
    lengths: tuple[Block, ...] = ()  # MSE vs L (models trained at the task's L)
    transfer: tuple[Block, ...] = ()  # MSE at test dimension d' (models trained at d)
    warp: dict[str, Any] | None = None  # {"condition", "matrix", "scores", "fits"}
    energy: dict[str, Any] | None = None
    matrices: dict[str, dict[str, list[list[float]]]] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    def report(self, path: str | os.PathLike, *, force: bool = False) -> Path:
        """Write the self-contained HTML page of this result."""
        from geoprobe.report.denoise import write_denoise_report

        return write_denoise_report(self, path, force=force)

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
            rows.append({"check": f"{method} attention MSE / Bayes MSE ≤", "target": TARGET_RATIO,
                         "measured": r.value, "ci": f"[{r.low:.4f}, {r.high:.4f}]", "pass": r.value <= TARGET_RATIO,
                         "required": method == "softmax"})
        return rows

    # -- persistence -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        from geoprobe import __version__
        from geoprobe.scan.result import _json_safe

        warp = None
        if self.warp is not None:
            warp = {**self.warp, "scores": [s.to_dict() for s in self.warp["scores"]],
                    "fits": [f.to_dict() for f in self.warp["fits"]]}
        return _json_safe({
            "kind": RESULTS_KIND, "version": RESULTS_VERSION, "geoprobe": __version__, "task": self.task,
            "config": self.config, "scores": [s.to_dict() for s in self.scores], "fits": [f.to_dict() for f in self.fits],
            "lengths": [b.to_dict() for b in self.lengths], "transfer": [b.to_dict() for b in self.transfer],
            "warp": warp, "energy": self.energy, "matrices": self.matrices, "training": self.training,
            "provenance": self.provenance})

    @classmethod
    def from_dict(cls, d: Any, source: str = "results") -> "DenoiseResult":
        from geoprobe.paths import check_results_kind

        fix = "pass the denoise.json that 'geoprobe denoise' wrote, or re-run it"
        d = check_results_kind(d, kind=RESULTS_KIND, version=RESULTS_VERSION, source=source,
                               what="denoising results file", fix=fix)
        try:
            warp = d.get("warp")
            if warp is not None:
                warp = {**warp, "scores": _scores(warp["scores"]), "fits": tuple(Fit.from_dict(f) for f in warp["fits"])}
            return cls(task=dict(d["task"]), config=dict(d["config"]), scores=_scores(d["scores"]),
                       fits=tuple(Fit.from_dict(f) for f in d["fits"]),
                       lengths=tuple(Block.from_dict(b) for b in d.get("lengths", [])),
                       transfer=tuple(Block.from_dict(b) for b in d.get("transfer", [])), warp=warp,
                       energy=d.get("energy"), matrices=dict(d.get("matrices", {})),
                       training=dict(d.get("training", {})), provenance=dict(d.get("provenance", {})))
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsError(f"{source} is damaged ({type(exc).__name__}: {exc}); {fix}") from None

    # -- figures -------------------------------------------------------------------------------
    def figure(self) -> Any:
        """The main figure: MSE vs context length (oracle floor dashed); the bar chart of scores without a sweep."""
        return self.lengths_figure() if self.lengths else self.scores_figure()

    def scores_figure(self) -> Any:
        import plotly.graph_objects as go

        s = self.scores
        fig = go.Figure(go.Bar(x=[x.method for x in s], y=[x.mse.value for x in s],
                               error_y=dict(type="data", symmetric=False, array=[x.mse.high - x.mse.value for x in s],
                                            arrayminus=[x.mse.value - x.mse.low for x in s])))
        fig.update_layout(title=f"{self.name}: MSE per coordinate (95 % bootstrap CI)", yaxis_type="log",
                          yaxis_title="MSE per coordinate", template="plotly_white")
        return fig

    def _sweep_figure(self, blocks: tuple[Block, ...], xlabel: str, title: str, log_x: bool) -> Any:
        import plotly.graph_objects as go

        fig = go.Figure()
        x = [b.key for b in blocks]
        for method in [s.method for s in blocks[0].scores]:
            ys = [b.get(method).mse for b in blocks]
            dash = "dash" if method == "oracle" else None
            fig.add_trace(go.Scatter(x=x, y=[e.value for e in ys], name=method, mode="lines+markers",
                                     line=dict(dash=dash, color="black" if method == "oracle" else None),
                                     error_y=dict(type="data", symmetric=False, array=[e.high - e.value for e in ys],
                                                  arrayminus=[e.value - e.low for e in ys])))
        fig.update_layout(title=title, xaxis_title=xlabel, yaxis_title="MSE per coordinate", template="plotly_white")
        if log_x:
            fig.update_xaxes(type="log")
        return fig

    def lengths_figure(self) -> Any:
        return self._sweep_figure(self.lengths, "context length L", f"{self.name}: MSE vs context length "
                                  f"(models trained at L = {self.task['context_length']}; dashed: oracle Bayes)", True)

    def transfer_figure(self) -> Any:
        return self._sweep_figure(self.transfer, "test subspace dimension d'", f"{self.name}: dimension transfer "
                                  f"(models trained at d = {self.task['d']}; dashed: oracle Bayes at d')", False)

    def weights_figure(self) -> Any:
        """Heatmaps of the learned W_KQ and W_PV of each model."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        panels = [(m, k) for m, mats in self.matrices.items() for k in ("W_KQ", "W_PV") if k in mats]
        fig = make_subplots(rows=1, cols=max(1, len(panels)), subplot_titles=[f"{m}: {k}" for m, k in panels])
        for i, (m, k) in enumerate(panels, start=1):
            W = self.matrices[m][k]
            vmax = max(abs(v) for row in W for v in row) or 1.0
            fig.add_trace(go.Heatmap(z=W, zmin=-vmax, zmax=vmax, colorscale="RdBu", reversescale=True,
                                     showscale=i == len(panels)), row=1, col=i)
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
                fig.add_trace(go.Scatter(x=[step * (i + 1) for i in range(len(curve))], y=curve, name=name,
                                         mode="lines+markers"))
        oracle = self.score("oracle").mse.value
        fig.add_hline(y=oracle, line_dash="dash", annotation_text="oracle (Bayes) MSE")
        fig.update_layout(title=f"{self.name}: training loss (mean over blocks of steps)", yaxis_type="log",
                          xaxis_title="step", yaxis_title="MSE per coordinate", template="plotly_white")
        return fig

    def figures(self) -> dict[str, Any]:
        out = {"scores": self.scores_figure(), "training": self.training_figure()}
        if self.lengths:
            out["lengths"] = self.lengths_figure()
        if self.transfer:
            out["transfer"] = self.transfer_figure()
        if self.matrices:
            out["weights"] = self.weights_figure()
        if self.energy:
            from geoprobe.denoise.energy import DescentComparison, EnergyLandscape

            marks = {k: tuple(v) for k, v in self.energy.get("marks", {}).items()}
            out["energy"] = EnergyLandscape.from_dict(self.energy["landscape"]).figure(marks=marks)
            out["descent"] = DescentComparison.from_dict(self.energy["descent"]).figure()
        return out


def scores_table(scores: tuple[Score, ...]) -> list[dict[str, str]]:
    """One row per method: MSE [95 % CI], ratio to the oracle [95 % CI] (paired bootstrap)."""
    def ci(e: Estimate | None, digits: int = 4) -> str:
        return "—" if e is None else f"{e.value:.{digits}g} [{e.low:.{digits}g}, {e.high:.{digits}g}]"

    return [{"method": s.method, "MSE per coordinate [95% CI]": ci(s.mse), "ratio to Bayes [95% CI]": ci(s.ratio)}
            for s in scores]


def fits_table(fits: tuple[Fit, ...]) -> list[dict[str, str]]:
    return [{"model": f.model, "matrix": f.matrix, "structure S": f.structure, "fitted c (W ≈ cS)": f"{f.c:.4g}",
             "predicted c": "—" if f.predicted is None else f"{f.predicted:.4g}",
             "residual ‖W−cS‖/‖W‖": f"{f.residual:.3f}"} for f in fits]
