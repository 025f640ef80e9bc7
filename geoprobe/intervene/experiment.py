"""`geoprobe intervene`: entropy-axis interventions during SULA (arXiv 2512.23752 §4.5–4.6, §6.2).

For each experiment (a set of layers edited together) and each strength, the edit along the
entropy axis and along ``n_controls`` random axes (orthogonal to it, same operation and
strength) is measured on the SULA prompts and on held-out text:

* geometry: ρ(axis coordinate of the edited values at the highest edited layer, the model's
  next-token entropy);
* SULA behaviour: MAE (bits) and Spearman ρ of the model's label entropy against the analytic
  posterior entropy;
* next-token behaviour: Δ entropy (bits), KL(unperturbed ‖ edited) in bits, top-1 agreement;
* perplexity ratio on held-out encyclopedic text (corpus passages).

The entropy axis of a layer is PC1 of the z-scored final-token values over the SULA prompts,
oriented by its correlation with the model's next-token entropy (:func:`fit_entropy_axis`).
Each experiment resumes from the residual stream at its lowest layer
(:class:`~geoprobe.intervene.resume.Resumable`, where the architecture is tested resumable; full
forwards otherwise), so a sweep never recomputes the layers below.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import numpy as np

from geoprobe.analysis.stats import Estimate
from geoprobe.checks import check_seed
from geoprobe.intervene.axis import InterventionError
from geoprobe.paths import JsonResult

Op = Literal["cut", "only", "shift"]
#: Pythia-410M (24 layers), the paper's defaults: single layers 12 and 23, and {8, 12, 16, 20, 23} at once
PAPER_SINGLE = (12, 23)
PAPER_MULTI = (8, 12, 16, 20, 23)
PAPER_LAST = 23
METRICS = ("axis_entropy_rho", "sula_mae", "sula_spearman", "delta_entropy", "kl", "top1_agreement",
           "perplexity_ratio")
DEFAULT_STRENGTHS = {"cut": (0.25, 0.5, 1.0), "only": (1.0,), "shift": (-2.0, 2.0)}


def paper_experiments(n_layers: int) -> tuple[tuple[int, ...], ...]:
    """The paper's layer choices at the same relative depth (layer / 23 of Pythia-410M)."""
    def at(layer: int) -> int:
        return min(n_layers - 1, int(round(layer * (n_layers - 1) / PAPER_LAST)))

    multi = tuple(sorted({at(x) for x in PAPER_MULTI}))
    return tuple(dict.fromkeys([(at(PAPER_SINGLE[0]),), (at(PAPER_SINGLE[1]),), multi]))


@dataclass(frozen=True)
class InterventionConfig:
    experiments: tuple[tuple[int, ...], ...] | None = None  # None: the paper's layers at the same relative depth
    op: Op = "cut"
    strengths: tuple[float, ...] | None = None  # None: DEFAULT_STRENGTHS[op]
    n_controls: int = 5
    n_per_k: int = 20  # SULA prompts per k (5 values of k: 100 prompts)
    n_texts: int = 8  # held-out encyclopedic passages for the perplexity ratio
    batch_size: int = 16
    n_resamples: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        check_seed(self.seed, "--seed (seed in a probe recipe)")
        if self.op not in DEFAULT_STRENGTHS:
            raise InterventionError(f"operation {self.op!r} is not cut|only|shift; pass --op cut|only|shift")
        if self.n_controls < 1:
            raise InterventionError(f"--controls {self.n_controls} must be at least 1 (random-axis controls)")
        if self.n_per_k < 2:
            raise InterventionError(f"--n-per-k {self.n_per_k} is too few SULA prompts to estimate an axis; pass 2 or more")
        for s in self.strengths or ():
            if self.op in ("cut", "only") and not 0.0 <= s <= 1.0:
                raise InterventionError(f"strength {s} of a {self.op} is outside [0, 1]; pass --strength between 0 and 1")
        if self.experiments is not None and (not self.experiments or any(not e for e in self.experiments)):
            raise InterventionError("every experiment needs at least one layer; fix --layers")

    @property
    def strength_list(self) -> tuple[float, ...]:
        return tuple(self.strengths) if self.strengths else DEFAULT_STRENGTHS[self.op]


@dataclass(frozen=True)
class InterventionRow:
    """One edit: the layers edited together, the strength, the axis (``entropy`` or a random seed)."""

    layers: tuple[int, ...]
    strength: float
    axis: str  # "entropy" or "random-<i>"
    metrics: dict[str, Estimate]

    def to_dict(self) -> dict[str, Any]:
        return {"layers": list(self.layers), "strength": self.strength, "axis": self.axis,
                "metrics": {k: v.to_dict() for k, v in self.metrics.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "InterventionRow":
        return cls(tuple(d["layers"]), float(d["strength"]), str(d["axis"]),
                   {k: Estimate.from_dict(v) for k, v in d["metrics"].items()})


RESULTS_KIND, RESULTS_VERSION = "geoprobe.intervene", 1


@dataclass(frozen=True, eq=False)
class InterventionResult(JsonResult):
    _file = "intervene.json"
    _page = "intervene.html"
    _what = "intervention results"
    _fix = "pass the intervene.json geoprobe intervene wrote"

    model: str
    provenance: dict[str, Any]
    config: dict[str, Any]
    op: str
    baseline: dict[str, Estimate]  # SULA MAE/ρ and the axis–entropy ρ of every axis layer, unperturbed
    axes: dict[int, dict[str, float]]  # per layer: PC1 share of the calibration values, |ρ(axis, entropy)|
    rows: tuple[InterventionRow, ...]
    timings: dict[str, float] = field(default_factory=dict)

    def report(self, path: str | os.PathLike, *, force: bool = False) -> Path:
        """Write the self-contained HTML page of this result."""
        from geoprobe.report.intervene import write_intervene_report

        return write_intervene_report(self, path, force=force)

    def __post_init__(self) -> None:
        if not self.rows:
            raise ValueError("an intervention result needs rows")
        if not any(r.axis == "entropy" for r in self.rows) or not any(r.axis.startswith("random") for r in self.rows):
            raise ValueError("rows must hold the entropy axis and random-axis controls")

    def experiments(self) -> list[tuple[tuple[int, ...], float]]:
        return list(dict.fromkeys((r.layers, r.strength) for r in self.rows))

    def summary(self) -> list[dict[str, Any]]:
        """Per experiment and strength: each metric's entropy-axis value [CI] and the controls' mean ± sd."""
        out = []
        for layers, s in self.experiments():
            true = next(r for r in self.rows if (r.layers, r.strength, r.axis) == (layers, s, "entropy"))
            ctrl = [r for r in self.rows if (r.layers, r.strength) == (layers, s) and r.axis != "entropy"]
            for m in METRICS:
                e = true.metrics[m]
                xs = np.array([c.metrics[m].value for c in ctrl], dtype=np.float64)
                xs = xs[np.isfinite(xs)]
                out.append({"layers": ",".join(map(str, layers)), "strength": s, "metric": m,
                            "entropy axis": _fmt(e), "random axes mean ± sd":
                            "n/a" if xs.size == 0 else f"{xs.mean():.4g} ± {xs.std(ddof=1) if xs.size > 1 else 0:.2g}",
                            "unperturbed": _fmt(self.baseline.get(_base_key(m, layers)))})
        return out

    def to_dict(self) -> dict[str, Any]:
        from geoprobe import __version__
        from geoprobe.scan.result import _json_safe

        return _json_safe({"kind": RESULTS_KIND, "version": RESULTS_VERSION, "geoprobe": __version__,
                           "model": self.model, "provenance": self.provenance, "config": self.config, "op": self.op,
                           "baseline": {k: v.to_dict() for k, v in self.baseline.items()},
                           "axes": {str(k): v for k, v in self.axes.items()},
                           "rows": [r.to_dict() for r in self.rows], "timings": self.timings})

    @classmethod
    def from_dict(cls, d: Any, source: str = "results") -> "InterventionResult":
        from geoprobe.errors import ResultsError
        from geoprobe.paths import check_results_kind

        d = check_results_kind(d, kind=RESULTS_KIND, version=RESULTS_VERSION, source=source,
                               what="intervention results file",
                               fix="pass the intervene.json that geoprobe intervene wrote (or re-run it)")
        try:
            return cls(model=d["model"], provenance=d["provenance"], config=d["config"], op=d["op"],
                       baseline={k: Estimate.from_dict(v) for k, v in d["baseline"].items()},
                       axes={int(k): v for k, v in d["axes"].items()},
                       rows=tuple(InterventionRow.from_dict(r) for r in d["rows"]), timings=d.get("timings", {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsError(f"{source} is damaged ({type(exc).__name__}: {exc}); re-run geoprobe intervene") from None

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
                true = sorted((r for r in self.rows if r.layers == layers and r.axis == "entropy"), key=lambda r: r.strength)
                x = [r.strength for r in true]
                y = np.array([r.metrics[m].value for r in true])
                fig.add_trace(go.Scatter(
                    x=x, y=y, mode="lines+markers", name=f"{label}: entropy axis", legendgroup=label,
                    showlegend=j == 0, line=dict(color=color),
                    error_y=dict(type="data", symmetric=False, array=np.array([r.metrics[m].high for r in true]) - y,
                                 arrayminus=y - np.array([r.metrics[m].low for r in true]))), row=row, col=col)
                means, sds = [], []
                for s in x:
                    xs = np.array([r.metrics[m].value for r in self.rows
                                   if r.layers == layers and r.strength == s and r.axis != "entropy"])
                    xs = xs[np.isfinite(xs)]
                    means.append(xs.mean() if xs.size else math.nan)
                    sds.append(xs.std(ddof=1) if xs.size > 1 else 0.0)
                fig.add_trace(go.Scatter(x=x, y=means, mode="lines+markers", name=f"{label}: random axes",
                                         legendgroup=label, showlegend=j == 0,
                                         line=dict(color=color, dash="dot"),
                                         error_y=dict(type="data", array=sds)), row=row, col=col)
        fig.update_xaxes(title_text="strength")
        fig.update_layout(title=dict(text=f"{self.model}: {self.op} along the entropy axis vs random axes"),
                          template="plotly_white", height=640)
        return fig


def _fmt(e: Estimate | None) -> str:
    if e is None or not math.isfinite(e.value):
        return "n/a"
    if not (math.isfinite(e.low) and math.isfinite(e.high)):
        return f"{e.value:.4g}"
    return f"{e.value:.4g} [{e.low:.4g}, {e.high:.4g}]"


def _base_key(metric: str, layers: tuple[int, ...]) -> str:
    if metric == "axis_entropy_rho":
        return f"axis_entropy_rho@{max(layers)}"
    return metric


def held_out_texts(model: Any, n: int, seed: int) -> list[str]:
    """``n`` encyclopedic passages (64–128 tokens) for the perplexity ratio; none if the corpus is missing."""
    from geoprobe.corpora import CorpusUnavailable, candidates

    try:
        return [p.text for p in candidates(["encyclopedic"], n, tokenizer=model.tokenizer, min_tokens=64,
                                           max_tokens=128, seed=seed + 7919)]
    except CorpusUnavailable:
        return []


def run_interventions(model: Any, config: InterventionConfig = InterventionConfig(), *,
                      progress: Callable[[str, int, int], None] | None = None) -> InterventionResult:
    """Fit the entropy axes on SULA prompts, then edit (true axis and random controls) per
    experiment and strength, resuming from the residual stream; see the module docstring."""
    from geoprobe.analysis.stats import bootstrap_ci
    from geoprobe.intervene._forward import final_logprobs, text_nll
    from geoprobe.intervene.axis import fit_entropy_axis, random_axes
    from geoprobe.intervene.metrics import axis_entropy_correlation, entropy_bits_of, kl_bits
    from geoprobe.intervene.ops import Edit, intervened, resolve_layer
    from geoprobe.intervene.resume import resumer
    from geoprobe.sula import SulaConfig
    from geoprobe.sula.evaluate import calibration_metrics, label_distribution
    from geoprobe.sula.task import check_context, generate, label_tokens, prompt_arrays

    L = model.layout.n_layers
    exps = tuple(tuple(sorted({resolve_layer(x, L) for x in e})) for e in (config.experiments or paper_experiments(L)))
    strengths = config.strength_list
    timings: dict[str, float] = {}
    t = time.perf_counter()
    sc = SulaConfig(n_per_k=config.n_per_k, seed=config.seed, batch_size=config.batch_size,
                    n_resamples=config.n_resamples)
    prompts = generate(sc)
    texts = [p.text for p in prompts]
    labels = label_tokens(model.tokenizer, sc.labels_for("main"), lead=sc.label_lead, first_token=sc.first_token)
    check_context(model, prompts)
    cols = prompt_arrays(prompts)
    held = held_out_texts(model, config.n_texts, config.seed)
    all_layers = sorted({x for e in exps for x in e})
    lp0, vals0 = final_logprobs(model, texts, config.batch_size, value_layers=all_layers)
    h0 = entropy_bits_of(lp0)
    nll0 = text_nll(model, held) if held else np.zeros(0)
    axes = {layer: fit_entropy_axis(vals0[layer], h0, layer=layer) for layer in all_layers}
    timings["baseline_s"] = time.perf_counter() - t
    kw = dict(n_resamples=config.n_resamples, random_state=config.seed)

    def sula_metrics(lp: Any) -> tuple[Estimate, Estimate]:
        dist = label_distribution(lp[:, list(labels.ids)].double().numpy())
        m = calibration_metrics(cols["k"], cols["entropy_bits"], dist["entropy"], dist["mass"],
                                n_resamples=config.n_resamples, random_state=config.seed)
        return m.mae, m.spearman

    mae0, rho_s0 = sula_metrics(lp0)
    baseline: dict[str, Estimate] = {"sula_mae": mae0, "sula_spearman": rho_s0}
    axis_info: dict[int, dict[str, float]] = {}
    for layer in all_layers:
        baseline[f"axis_entropy_rho@{layer}"] = axis_entropy_correlation(vals0[layer], h0, axes[layer], **kw)
        axis_info[layer] = {"rho_axis_entropy": baseline[f"axis_entropy_rho@{layer}"].value}
    nan = Estimate(math.nan, math.nan, math.nan)
    for m in ("delta_entropy", "kl", "perplexity_ratio"):
        baseline[m] = Estimate(0.0, 0.0, 0.0)
    baseline["top1_agreement"] = Estimate(1.0, 1.0, 1.0)
    rng = np.random.default_rng(config.seed)
    controls = {layer: random_axes(axes[layer], config.n_controls, rng) for layer in all_layers}
    rows: list[InterventionRow] = []
    total, done = len(exps) * len(strengths) * (1 + config.n_controls), 0
    t = time.perf_counter()
    for layers in exps:
        resume = resumer(model, texts, min(layers), config.batch_size)
        g = max(layers)
        for s in strengths:
            sets = [("entropy", {x: axes[x] for x in layers})]
            sets += [(f"random-{i}", {x: controls[x][i] for x in layers}) for i in range(config.n_controls)]
            for name, ax in sets:
                edits = {x: Edit(a, config.op, s) for x, a in ax.items()}
                lp, vals = resume.run(edits, [g])
                h1 = entropy_bits_of(lp)
                mae, rho_s = sula_metrics(lp)
                if held:
                    with intervened(model, edits):
                        nll = text_nll(model, held)
                    ppl = bootstrap_ci((nll0, nll), statistic=lambda b, p, axis: np.exp(p.mean(axis) - b.mean(axis)),
                                       method="percentile", **kw)
                else:
                    ppl = nan
                agree = (lp0.argmax(-1) == lp.argmax(-1)).double().numpy()
                metrics = {
                    "axis_entropy_rho": axis_entropy_correlation(vals[g], h1, axes[g], **kw),
                    "sula_mae": mae, "sula_spearman": rho_s,
                    "delta_entropy": bootstrap_ci(h1 - h0, method="percentile", **kw),
                    "kl": bootstrap_ci(kl_bits(lp0, lp), method="percentile", **kw),
                    "top1_agreement": bootstrap_ci(agree, method="percentile", **kw),
                    "perplexity_ratio": ppl,
                }
                rows.append(InterventionRow(layers, float(s), name, metrics))
                done += 1
                if progress is not None:
                    progress("interventions", done, total)
    timings["interventions_s"] = time.perf_counter() - t
    prov = model.provenance.with_prompts(texts, config.seed).to_dict()
    cfg = asdict(config)
    cfg["experiments"] = [list(e) for e in exps]
    cfg["strengths"] = list(strengths)
    cfg["labels"] = list(labels.labels)
    cfg["held_out_texts"] = len(held)
    return InterventionResult(model=model.provenance.model_id, provenance=prov, config=cfg, op=config.op,
                              baseline=baseline, axes=axis_info, rows=tuple(rows), timings=timings)
