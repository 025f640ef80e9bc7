"""The page of a training trajectory (trajectory.html): its checkpoints, the loss curves and provenance;
registered for :class:`~geoprobe.trajectory.result.TrajectoryResult` (geoprobe.report.page.register_page)."""

from __future__ import annotations

import math

import numpy as np

from geoprobe.report.blocks import html_table
from geoprobe.report.page import Figure, Section, figures_section, paragraph, provenance_section, register_page
from geoprobe.trajectory.result import TrajectoryResult


def title(result: TrajectoryResult) -> str:
    return "Training trajectory: a small Pythia-shaped GPT-NeoX on the bundled corpora"


def subtitle(result: TrajectoryResult) -> str:
    c, m = result.config, result.model
    return (
        f"geoprobe trajectory · {c.layers} layers, d_model {c.hidden_size}, {c.heads} heads · "
        f"{m.n_params:,} parameters ({m.n_embedding_params:,} in embeddings) · {c.steps:,} steps of "
        f"{c.batch_size}×{c.seq_len} tokens · seed {c.seed} · {len(result.checkpoints)} checkpoints"
    )


def figures(result: TrajectoryResult) -> list[Figure]:
    import plotly.graph_objects as go

    loss = np.asarray(result.losses, dtype=float)
    k = min(20, loss.size)
    smooth = np.convolve(loss, np.ones(k) / k, mode="valid") if k else loss
    x = np.arange(k, loss.size + 1)  # the mean of updates x-k .. x-1, i.e. the model at step x
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=smooth, mode="lines", name=f"training (mean of {k} steps)"))
    ev = [(max(c.step, 1), c.eval_loss) for c in result.checkpoints if math.isfinite(c.eval_loss)]
    if ev:
        fig.add_trace(go.Scatter(x=[s for s, _ in ev], y=[v for _, v in ev], mode="markers+lines", name="held-out"))
    fig.update_layout(
        xaxis_title="training step (log; step 0 drawn at 1)",
        xaxis_type="log",
        yaxis_title="cross-entropy (nats/token)",
        template="plotly_white",
        height=440,
    )
    return [
        Figure(
            "loss",
            "Training loss (running mean) and held-out loss at each checkpoint, against the step.",
            fig,
        )
    ]


def sections(result: TrajectoryResult) -> list[Section]:
    rows = [
        {
            "step": f"{c.step:,}",
            "directory": c.path,
            "tokens": f"{c.tokens:,}",
            "lr": f"{c.lr:.2e}",
            "train loss": f"{c.train_loss:.3f}",
            "held-out loss": f"{c.eval_loss:.3f}",
            "MB": f"{c.bytes / 1e6:.1f}",
        }
        for c in result.checkpoints
    ]
    d = result.data
    text = (
        f"Trained on {d.train_tokens:,} tokens of {sum(d.documents.values()):,} documents "
        f"({', '.join(f'{k} {v}' for k, v in d.documents.items())}); {d.heldout_tokens:,} held-out tokens "
        f"score each checkpoint. A small model on a small corpus, shaped like Pythia: not Pythia. "
        f"{result.train_s:.0f} s of training; checkpoints take {result.total_bytes / 1e6:.0f} MB."
    )
    return [
        Section("Checkpoints", html_table(rows) + paragraph(text)),
        figures_section(figures(result)),
        provenance_section(result.provenance, config=result.config.to_dict()),
    ]


PAGE = register_page(TrajectoryResult, title=title, subtitle=subtitle, sections=sections, figures=figures)
