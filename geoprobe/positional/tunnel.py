"""Wind-tunnel length generalisation: a trained wind-tunnel transformer scored against the analytic
posterior at sequence lengths beyond the one it was trained on.

For each K in the requested lengths, ``n_eval`` fresh sequences of ``task.with_length(K)`` are
drawn (the windtunnel's own evaluation seeds) and the transformer's predictive distribution is
compared with the exact posterior by :func:`geoprobe.windtunnel.evaluate.metrics` (entropy MAE,
the paper's and the per-sample definition, and KL(Bayes ‖ model), bits, with bootstrap CIs over
sequences). Critical length: the smallest K above the training length whose per-sample MAE CI
lies wholly above the training length's (lo_K > hi_K0); None when none does.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from geoprobe.errors import GeoprobeError, ResultsError
from geoprobe.paths import JsonResult
from geoprobe.windtunnel.evaluate import TunnelMetrics

TUNNEL_KIND = "geoprobe.positional.windtunnel"
TUNNEL_VERSION = 1


@dataclass(frozen=True, eq=False)
class TunnelLengthCurve(JsonResult):
    """Error vs sequence length of one trained wind-tunnel transformer."""

    _file = "positional.json"
    _page = "positional.html"
    _what = "positional wind-tunnel results file"
    _fix = "pass the positional.json that 'geoprobe positional --windtunnel RUN_DIR' wrote"

    run_dir: str
    task: dict[str, Any]
    train_K: int
    metrics: tuple[TunnelMetrics, ...]
    provenance: dict[str, Any] = field(default_factory=dict)

    def report(self, path: str | os.PathLike, *, force: bool = False) -> Path:
        """Write the self-contained HTML page of this result."""
        from geoprobe.report.positional import write_positional_report

        return write_positional_report(self, path, force=force)

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
        from geoprobe.positional.stability import critical_length

        base = next((m for m in self.metrics if m.K == self.train_K), self.metrics[0])
        beyond = [base, *(m for m in self.metrics if m.K > base.K)]
        return critical_length([m.K for m in beyond], [m.mae_sample for m in beyond], worse="higher")

    def to_dict(self) -> dict[str, Any]:
        from geoprobe import __version__
        from geoprobe.scan.result import _json_safe

        return _json_safe({"kind": TUNNEL_KIND, "version": TUNNEL_VERSION, "geoprobe": __version__,
                           "run_dir": self.run_dir, "task": self.task, "train_K": self.train_K,
                           "metrics": [m.to_dict() for m in self.metrics], "critical_length": self.critical_length,
                           "provenance": self.provenance})

    @classmethod
    def from_dict(cls, d: Any, source: str = "results") -> "TunnelLengthCurve":
        from geoprobe.paths import check_results_kind

        d = check_results_kind(d, kind=TUNNEL_KIND, version=TUNNEL_VERSION, source=source, what=cls._what, fix=cls._fix)
        try:
            return cls(run_dir=str(d["run_dir"]), task=dict(d["task"]), train_K=int(d["train_K"]),
                       metrics=tuple(TunnelMetrics.from_dict(m) for m in d["metrics"]),
                       provenance=dict(d.get("provenance", {})))
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsError(f"{source} is damaged ({type(exc).__name__}: {exc}); {cls._fix}") from None

    def figure(self) -> Any:
        """Per-sample entropy MAE and KL (bits, 95 % CIs) against K; dashed: the training length."""
        import numpy as np
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        Ks = list(self.lengths)
        fig = make_subplots(rows=1, cols=2, subplot_titles=("entropy MAE per sample (bits)", "KL(Bayes ‖ model) (bits)"))
        for col, name in ((1, "mae_sample"), (2, "kl")):
            es = [getattr(m, name) for m in self.metrics]
            v = np.array([e.value for e in es])
            fig.add_trace(go.Scatter(x=Ks, y=v, mode="lines+markers", showlegend=False,
                                     error_y=dict(type="data", symmetric=False, array=np.array([e.high for e in es]) - v,
                                                  arrayminus=v - np.array([e.low for e in es]))), row=1, col=col)
            fig.add_vline(x=self.train_K, line_dash="dot", line_color="grey", row=1, col=col,
                          annotation_text=f"trained at K = {self.train_K}")
            if self.critical_length is not None:
                fig.add_vline(x=self.critical_length, line_dash="dash", line_color="firebrick", row=1, col=col)
        fig.update_xaxes(title_text="sequence length K (predictions)")
        fig.update_layout(template="plotly_white", height=400)
        return fig


def check_tunnel_lengths(lengths: Sequence[int], max_positions: int, seq_len: Callable[[int], int]) -> None:
    for K in lengths:
        if seq_len(K) > max_positions:
            raise GeoprobeError(f"--lengths {K} gives sequences of {seq_len(K)} tokens, beyond the transformer's "
                                f"{max_positions} positions; pass smaller --lengths")


def tunnel_length_curve(run_dir: str | Path, lengths: Sequence[int], *, n_eval: int = 256, n_resamples: int = 1000,
                        progress: Callable[[str, int, int], None] | None = None) -> TunnelLengthCurve:
    """Score the finished transformer of wind-tunnel run ``run_dir`` at every K in ``lengths``."""
    from geoprobe.models.loading import _local_weights_hash
    from geoprobe.provenance import package_versions
    from geoprobe.windtunnel.evaluate import eval_batch, metrics, model_predictive
    from geoprobe.windtunnel.train import checkpoint_dir, list_checkpoints, load_weights, read_spec

    run = Path(run_dir)
    if not (run / "transformer" / "run.json").exists():
        raise GeoprobeError(f"--windtunnel {str(run)!r} is not a wind-tunnel run (no transformer/run.json); pass a "
                            "directory written by 'geoprobe windtunnel train'")
    spec = read_spec(run / "transformer")
    steps = list_checkpoints(run / "transformer")
    if not steps:
        raise GeoprobeError(f"--windtunnel {str(run)!r} has no checkpoint; finish 'geoprobe windtunnel train' first")
    ckpt = checkpoint_dir(run / "transformer", steps[-1])
    model = load_weights(spec, ckpt)
    task = spec.task_obj
    check_tunnel_lengths(lengths, int(model.config.max_position_embeddings), lambda K: task.with_length(K).seq_len)
    rows = []
    for i, K in enumerate(lengths):
        t_k = task.with_length(K)
        batch = eval_batch(t_k, n_eval, spec.train.seed)
        probs, mass = model_predictive(model, batch, t_k.answer_ids)
        rows.append(metrics("transformer", probs, batch, mass, n_resamples=n_resamples, random_state=spec.train.seed))
        if progress is not None:
            progress("wind-tunnel lengths", i + 1, len(lengths))
    prov = {"run_dir": str(run), "checkpoint_step": steps[-1], "weights": _local_weights_hash(ckpt),
            "seed": spec.train.seed, "eval_data": f"{n_eval} fresh sequences per length (windtunnel evaluation seeds)",
            "train_seed": spec.train.seed, "n_eval": n_eval,
            "n_resamples": n_resamples, "versions": package_versions()}
    return TunnelLengthCurve(run_dir=str(run), task=dict(spec.task), train_K=int(task.K), metrics=tuple(rows),
                             provenance=prov)
