"""The positional results: per-head prior fits, distance profiles and stability over lengths of a
pretrained model (:class:`PositionalResult`), and a wind-tunnel transformer's error against sequence
length (:class:`TunnelLengthCurve`); persistence, pages and figures."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.stats import Estimate
from geoprobe.positional import report
from geoprobe.positional.heads import CLASSES, HeadPrior
from geoprobe.positional.prior import gg_prior, rope_decay
from geoprobe.positional.stability import Stability, critical_length
from geoprobe.report.page import Figure, Page, Section
from geoprobe.results import Result
from geoprobe.serial import encode
from geoprobe.windtunnel.evaluate import TunnelMetrics


@dataclass(frozen=True, eq=False)
class PositionalResult(Result, Page):
    """What ``geoprobe positional`` measured on one model."""

    KIND: ClassVar[str] = "geoprobe.positional"
    FILE: ClassVar[str] = "positional.json"
    PAGE: ClassVar[str | None] = "positional.html"
    WHAT: ClassVar[str] = "positional results file"
    FIX: ClassVar[str] = "pass the positional.json that 'geoprobe positional' wrote"

    model: str
    layers: tuple[int, ...]
    n_heads: int
    fit_length: int
    max_distance: int
    exclude_first: int
    n_prompts: int
    n_resamples: int
    heads: tuple[HeadPrior, ...]
    profiles: Float[np.ndarray, "L H Dp1"]
    rope: tuple[float, int] | None  # (rope_theta, rotary_dim)
    stability: Stability | None
    config: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(int(x) for x in self.layers))
        prof = np.asarray(self.profiles, dtype=np.float64)
        L = len(self.layers)
        if prof.shape != (L, self.n_heads, self.max_distance + 1):
            raise ValueError(f"profiles {prof.shape}, expected ({L}, {self.n_heads}, {self.max_distance + 1})")
        if not np.allclose(prof.sum(-1), 1.0, atol=1e-6) or (prof < 0).any():
            raise ValueError("every profile must be a distribution over the distance window")
        prof.setflags(write=False)
        object.__setattr__(self, "profiles", prof)
        if [(h.layer, h.head) for h in self.heads] != [(x, h) for x in self.layers for h in range(self.n_heads)]:
            raise ValueError("heads must list every (layer, head) once, layer-major")
        if self.fit_length < self.max_distance + 1 + self.exclude_first:
            raise ValueError(
                f"fit length {self.fit_length} cannot hold distances 0..{self.max_distance} "
                f"after excluding {self.exclude_first} first token(s)"
            )
        if self.rope is not None:
            object.__setattr__(self, "rope", (float(self.rope[0]), int(self.rope[1])))

    # -- summaries ---------------------------------------------------------------------------
    def head(self, layer: int, h: int) -> HeadPrior:
        return self.heads[self.layers.index(layer) * self.n_heads + h]

    def class_counts(self) -> dict[str, int]:
        c = Counter(h.head_class for h in self.heads)
        return {k: c.get(k, 0) for k in CLASSES}

    def class_counts_by_layer(self) -> dict[int, dict[str, int]]:
        return {
            x: {k: sum(1 for h in self.heads if h.layer == x and h.head_class == k) for k in CLASSES}
            for x in self.layers
        }

    def beta_summary(self) -> dict[str, Any]:
        """Quantiles of β̂ over converged heads that are not sink-dominated, flat or local."""
        b = np.array([h.beta.value for h in self.heads if h.head_class in ("ALiBi-like", "Gaussian-like") and h.beta])
        if b.size == 0:
            return {"n": 0}
        q = np.quantile(b, [0.1, 0.25, 0.5, 0.75, 0.9])
        return {
            "n": int(b.size),
            "q10": q[0],
            "q25": q[1],
            "median": q[2],
            "q75": q[3],
            "q90": q[4],
            "min": float(b.min()),
            "max": float(b.max()),
        }

    def rows(self) -> list[dict[str, str]]:
        """One table row per head (the report's and the CLI's)."""

        def est(e: Estimate | None) -> str:
            return "—" if e is None else f"{e:.2f}"

        out = []
        for h in self.heads:
            best = min(h.kl_ref, key=lambda k: h.kl_ref[k])
            out.append(
                {
                    "layer": str(h.layer),
                    "head": str(h.head),
                    "class": h.head_class + (" (?)" if h.ambiguous else ""),
                    "sink mass": f"{h.sink_mass:.2f}",
                    "μ": est(h.mu),
                    "σ": est(h.sigma),
                    "β": est(h.beta),
                    "KL fit (bits)": "—" if h.fit_kl is None else f"{h.fit_kl:.3f}",
                    "nearest reference": f"{best} ({h.kl_ref[best]:.3f})",
                    "note": h.reason,
                }
            )
        return out

    # -- persistence -------------------------------------------------------------------------
    def body(self) -> dict[str, Any]:  # stored shape differs: class counts and the β summary (derived) follow heads
        d = super().body()
        keys = list(d)
        i = keys.index("heads") + 1
        derived = {"class_counts": self.class_counts(), "beta_summary": encode(self.beta_summary())}
        return {**{k: d[k] for k in keys[:i]}, **derived, **{k: d[k] for k in keys[i:]}}

    # -- page ----------------------------------------------------------------------------------
    def title(self) -> str:
        return f"Positional priors: {self.model}"

    def subtitle(self) -> str:
        return f"geoprobe positional · {self.provenance.get('created', '')}"

    def sections(self) -> list[Section]:
        return report.sections(self)

    # -- figures -----------------------------------------------------------------------------
    def beta_figure(self) -> Any:
        """Heat map of β̂ per (layer, head) (blank: no converged fit) and β̂ with its CI by layer."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        L, H = len(self.layers), self.n_heads
        z = np.full((L, H), np.nan)
        text = np.empty((L, H), dtype=object)
        for h in self.heads:
            i = self.layers.index(h.layer)
            if h.beta is not None:
                z[i, h.head] = h.beta.value
            text[i, h.head] = f"{h.head_class}<br>β = {'—' if h.beta is None else f'{h.beta.value:.2f}'}"
        fig = make_subplots(rows=1, cols=2, subplot_titles=("fitted β per head", "β with 95 % CI (fitted heads)"))
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=list(range(H)),
                y=list(self.layers),
                text=text,
                hoverinfo="text+x+y",
                colorscale="Viridis",
                zmin=0,
                zmax=4,
                colorbar=dict(title="β", x=0.45),
            ),
            row=1,
            col=1,
        )
        pts = [h for h in self.heads if h.beta is not None]
        if pts:
            v = np.array([h.beta.value for h in pts])
            lo = np.array([h.beta.low for h in pts])
            hi = np.array([h.beta.high for h in pts])
            x = np.array([h.layer + (h.head - H / 2) / (2.5 * H) for h in pts])
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=v,
                    mode="markers",
                    showlegend=False,
                    text=[h.head_class for h in pts],
                    error_y=dict(
                        type="data", symmetric=False, array=np.nan_to_num(hi - v), arrayminus=np.nan_to_num(v - lo)
                    ),
                ),
                row=1,
                col=2,
            )
        for y, name in ((1.0, "Laplace (ALiBi)"), (2.0, "Gaussian")):
            fig.add_hline(y=y, line_dash="dot", line_color="grey", row=1, col=2, annotation_text=name)
        fig.update_xaxes(title_text="head", row=1, col=1)
        fig.update_yaxes(title_text="layer", row=1, col=1)
        fig.update_xaxes(title_text="layer", row=1, col=2)
        fig.update_yaxes(title_text="β", type="log", row=1, col=2)
        fig.update_layout(template="plotly_white", height=480)
        return fig

    def example_heads(self, k: int = 6) -> list[HeadPrior]:
        """Up to ``k`` heads to draw: the best-fitted head of each class present, then the rest by fit KL."""
        chosen: list[HeadPrior] = []
        for c in CLASSES:
            of = [h for h in self.heads if h.head_class == c]
            if of:
                chosen.append(min(of, key=lambda h: h.fit_kl if h.fit_kl is not None else math.inf))
        return chosen[:k]

    def profile_figure(self, heads: list[HeadPrior] | None = None) -> Any:
        """Measured profiles (log scale) with the generalised-Gaussian fit and the reference shapes."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        heads = heads or self.example_heads()
        cols = min(3, max(1, len(heads)))
        rows = math.ceil(len(heads) / cols)
        fig = make_subplots(
            rows=rows, cols=cols, subplot_titles=[f"L{h.layer} H{h.head}: {h.head_class}" for h in heads]
        )
        delta = np.arange(self.max_distance + 1, dtype=np.float64)
        colours = {
            "measured": "black",
            "fit": "firebrick",
            "uniform": "grey",
            "laplace": "royalblue",
            "gaussian": "seagreen",
            "rope": "darkorange",
        }
        for n, h in enumerate(heads):
            r, c = n // cols + 1, n % cols + 1
            curves = {"measured": self.profiles[self.layers.index(h.layer), h.head]}
            if h.beta is not None:
                curves["fit"] = gg_prior(delta, h.mu.value, h.sigma.value, h.beta.value)  # type: ignore[union-attr]
            curves["uniform"] = np.full(delta.size, 1.0 / delta.size)
            for name, b in (("laplace", 1.0), ("gaussian", 2.0)):
                mu, sigma = h.ref_params[name]
                curves[name] = gg_prior(delta, mu, sigma, b)
            if "rope" in h.ref_params and self.rope is not None:
                z = h.ref_params["rope"][0] * rope_decay(self.max_distance, *self.rope)
                curves["rope"] = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            for name, y in curves.items():
                fig.add_trace(
                    go.Scatter(
                        x=delta,
                        y=y,
                        mode="lines",
                        name=name,
                        legendgroup=name,
                        showlegend=n == 0,
                        line=dict(
                            color=colours[name],
                            width=2.5 if name == "measured" else 1.5,
                            dash="solid" if name in ("measured", "fit") else "dot",
                        ),
                    ),
                    row=r,
                    col=c,
                )
        fig.update_yaxes(type="log", title_text="p(Δ)")
        fig.update_xaxes(title_text="distance Δ")
        fig.update_layout(template="plotly_white", height=320 * rows)
        return fig

    def class_figure(self) -> Any:
        """Stacked counts of head classes per layer."""
        import plotly.graph_objects as go

        by = self.class_counts_by_layer()
        fig = go.Figure([go.Bar(x=list(self.layers), y=[by[x][c] for x in self.layers], name=c) for c in CLASSES])
        fig.update_layout(
            barmode="stack", template="plotly_white", height=380, xaxis_title="layer", yaxis_title="heads"
        )
        return fig

    def figures(self) -> list[Figure]:
        out = [
            Figure("beta", report.CAPTIONS["beta"], self.beta_figure()),
            Figure("profiles", report.CAPTIONS["profiles"], self.profile_figure()),
            Figure("classes", report.CAPTIONS["classes"], self.class_figure()),
        ]
        if self.stability is not None:
            out.append(Figure("stability", report.CAPTIONS["stability"], self.stability.figure()))
        return out


@dataclass(frozen=True, eq=False)
class TunnelLengthCurve(Result, Page):
    """Error vs sequence length of one trained wind-tunnel transformer."""

    KIND: ClassVar[str] = "geoprobe.positional.windtunnel"
    FILE: ClassVar[str] = "positional.json"
    PAGE: ClassVar[str | None] = "positional.html"
    WHAT: ClassVar[str] = "positional wind-tunnel results file"
    FIX: ClassVar[str] = "pass the positional.json that 'geoprobe positional --windtunnel RUN_DIR' wrote"

    run_dir: str
    task: dict[str, Any]
    train_K: int
    metrics: tuple[TunnelMetrics, ...]
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Ks = [m.K for m in self.metrics]
        if not Ks or Ks != sorted(set(Ks)):
            raise ValueError(f"lengths {Ks} must be non-empty, increasing and distinct")
        if self.train_K < 1:
            raise ValueError(f"training length {self.train_K} must be positive")

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(m.K for m in self.metrics)

    @property
    def critical_length(self) -> int | None:
        base = next((m for m in self.metrics if m.K == self.train_K), self.metrics[0])
        beyond = [base, *(m for m in self.metrics if m.K > base.K)]
        return critical_length([m.K for m in beyond], [m.mae_sample for m in beyond], worse="higher")

    # -- persistence -------------------------------------------------------------------------
    def body(self) -> dict[str, Any]:  # stored shape differs: the critical length (derived) follows the metrics
        d = super().body()
        provenance = d.pop("provenance")
        return {**d, "critical_length": self.critical_length, "provenance": provenance}

    # -- page ----------------------------------------------------------------------------------
    def title(self) -> str:
        return f"Wind-tunnel length generalisation: {self.task.get('name')}"

    def sections(self) -> list[Section]:
        return report.tunnel_sections(self)

    def figures(self) -> list[Figure]:
        return [Figure("tunnel", report.CAPTIONS["tunnel"], self.figure())]

    def figure(self) -> Any:
        """Per-sample entropy MAE and KL (bits, 95 % CIs) against K; dashed: the training length."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        Ks = list(self.lengths)
        fig = make_subplots(
            rows=1, cols=2, subplot_titles=("entropy MAE per sample (bits)", "KL(Bayes ‖ model) (bits)")
        )
        for col, name in ((1, "mae_sample"), (2, "kl")):
            es = [getattr(m, name) for m in self.metrics]
            v = np.array([e.value for e in es])
            fig.add_trace(
                go.Scatter(
                    x=Ks,
                    y=v,
                    mode="lines+markers",
                    showlegend=False,
                    error_y=dict(
                        type="data",
                        symmetric=False,
                        array=np.array([e.high for e in es]) - v,
                        arrayminus=v - np.array([e.low for e in es]),
                    ),
                ),
                row=1,
                col=col,
            )
            fig.add_vline(
                x=self.train_K,
                line_dash="dot",
                line_color="grey",
                row=1,
                col=col,
                annotation_text=f"trained at K = {self.train_K}",
            )
            if self.critical_length is not None:
                fig.add_vline(x=self.critical_length, line_dash="dash", line_color="firebrick", row=1, col=col)
        fig.update_xaxes(title_text="sequence length K (predictions)")
        fig.update_layout(template="plotly_white", height=400)
        return fig
