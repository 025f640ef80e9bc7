"""geoprobe's own probes on the trained wind-tunnel transformers, checkpoint by checkpoint.

Every checkpoint directory is an ordinary Hugging Face model, booted with
``geoprobe.models.load_model`` and captured with ``geoprobe.capture.capture`` exactly as an LLM
is. The probe prompts are task sequences cut just after a query token (a bijection key, an HMM
observation), so the final token's next-token distribution is the prediction the analytic
posterior describes; the cut position is drawn uniformly, so the analytic entropies span the
task's range.

Per checkpoint: key orthogonality of W_K (vs the same model's step-0 initialisation), the
value manifold of the last layer (PC1 share, and Spearman ρ of the PC1 coordinate with the
**analytic** entropy), attention entropy per layer, the final token's attention patterns, and
the entropy MAE on held-out sequences.

Frame vs precision (arXiv 2512.22473): the *frame* is the routing, measured as the total
variation distance of each checkpoint's attention patterns to the final checkpoint's (mean over
layers, heads, prompts); *precision* is the entropy error. Progress fractions:
``frame(s) = 1 − TV(s)/TV(0)`` and, on a log scale because the error falls by orders of
magnitude, ``precision(s) = log(MAE(0)/MAE(s)) / log(MAE(0)/MAE(final))``. ``t90`` is the step at
which a fraction reaches 0.9, interpolated in log step between the checkpoints around the crossing
(:mod:`geoprobe.windtunnel.t90`, which also gives ``t90_interval``: a bootstrap over this run's probe
prompts and held-out sequences). One run cannot say which comes first across training runs:
:mod:`geoprobe.windtunnel.frame` tests the difference over training seeds.

Calibration: |ρ| of PC1 with the analytic entropy at the layer of the final checkpoint where it is
largest (``calibration_layer``; every layer's ρ is kept in ``final_layer_rho``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.alignment import spearman
from geoprobe.analysis.manifold import ValueManifold
from geoprobe.analysis.orthogonality import head_orthogonality
from geoprobe.analysis.stats import Estimate, bootstrap_ci
from geoprobe.serial import Record
from geoprobe.windtunnel.evaluate import eval_batch, model_predictive, paper_mae
from geoprobe.windtunnel.nets import to_text
from geoprobe.windtunnel.t90 import T90Interval, frame_fraction, precision_fraction, t90, t90_interval
from geoprobe.windtunnel.tasks import Batch, Task, entropy_bits
from geoprobe.windtunnel.train import RunSpec, checkpoint_dir, list_checkpoints, load_weights, step_rng

PROBE_SEED_OFFSET = 20_000_033


def probe_prompts(task: Task, n: int, seed: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``n`` prompts ending at a query token, their analytic entropies (bits) and query indices."""
    batch = task.sample(n, step_rng(seed + PROBE_SEED_OFFSET, task.K))
    rng = step_rng(seed + PROBE_SEED_OFFSET, -1 % 2**31)
    which = rng.integers(0, task.K, size=n)
    texts = [to_text(batch.ids[i, : batch.positions[k] + 1], task.vocab) for i, k in enumerate(which)]
    return texts, batch.entropy[np.arange(n), which], which


def pc1_coords(values: Float[np.ndarray, "n Hkv d"]) -> tuple[np.ndarray, float]:
    """PC1 coordinate per prompt and PC1's share of variance (standardised PCA, as the scan)."""
    x = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
    fit = ValueManifold(n_components=1).fit(x)
    return fit.coords_[:, 0], float(fit.explained_variance_ratio_[0])


@dataclass(frozen=True)
class CheckpointProbe:
    step: int
    key_orth: tuple[float, ...]  # per layer, mean over heads
    attn_entropy: tuple[float, ...]  # per layer, mean over heads and prompts (bits)
    value_pc1: float
    value_rho: float  # Spearman(PC1 coordinate, analytic entropy), last layer
    layer_rho: tuple[float, ...]  # the same for every layer
    mae_paper: float
    mae_sample: float
    mae_sequences: np.ndarray  # (m,) each held-out sequence's mean |H_model − H_Bayes|; not serialised
    patterns: np.ndarray  # (L, n, H, T) final-token attention; not serialised
    pc1: tuple[np.ndarray, ...]  # (n,) PC1 coordinates per layer; not serialised
    model_entropy: np.ndarray  # (n,) the captured next-token entropy (full vocabulary)


def probe_checkpoint(
    ckpt: Path, spec: RunSpec, texts: Sequence[str], analytic: Float[np.ndarray, " n"], batch: Batch
) -> CheckpointProbe:
    """Boot ``ckpt`` like any LLM, capture the probe prompts (``analytic``: their analytic entropies),
    and score it on the held-out sequences ``batch``."""
    from geoprobe.capture import CaptureConfig, capture
    from geoprobe.models.loading import load_model

    task = spec.task_obj
    loaded = load_model(str(ckpt))
    cap = capture(
        loaded, list(texts), CaptureConfig(values=True, keys=False, attention="distribution", batch_size=128, top_k=1)
    )
    per_layer = []
    for li in range(len(cap.layers)):
        coords, share = pc1_coords(cap.values[li])
        per_layer.append((coords, share, float(spearman(coords, analytic))))
    probs, _ = model_predictive(load_weights(spec, ckpt), batch, task.answer_ids)
    hm, ht = entropy_bits(probs), batch.entropy
    return CheckpointProbe(
        step=int(ckpt.name.removeprefix("step-")),
        key_orth=tuple(float(x) for x in head_orthogonality(cap.w_k).mean(1)),
        attn_entropy=tuple(float(x) for x in cap.attn_entropy.mean((1, 2))),
        value_pc1=per_layer[-1][1],
        value_rho=per_layer[-1][2],
        layer_rho=tuple(r for _, _, r in per_layer),
        mae_paper=paper_mae(hm, ht),
        mae_sample=float(np.abs(hm - ht).mean()),
        mae_sequences=np.abs(hm - ht).mean(1),
        patterns=cap.attn_pattern,
        pc1=tuple(c for c, _, _ in per_layer),
        model_entropy=cap.next_entropy.astype(np.float64),
    )


@dataclass(frozen=True, eq=False)
class TrainingGeometry(Record):
    """Geometry of the transformer across its checkpoints (C checkpoints, L layers)."""

    steps: tuple[int, ...]
    n_probes: int
    key_orth: tuple[tuple[float, ...], ...]  # (C, L)
    attn_entropy: tuple[tuple[float, ...], ...]  # (C, L)
    frame_tv: tuple[float, ...]  # (C,) attention TV distance to the final checkpoint
    value_pc1: tuple[float, ...]
    value_rho: tuple[float, ...]
    mae_paper: tuple[float, ...]
    mae_sample: tuple[float, ...]
    final_layer_rho: tuple[float, ...]  # (L,)
    calibration: Estimate  # |ρ(PC1, analytic entropy)| at calibration_layer of the final checkpoint, CI over prompts
    final_pc1: tuple[float, ...]  # (n,) PC1 coordinates at calibration_layer, for the calibration scatter
    analytic_entropy: tuple[float, ...]  # (n,)
    final_model_entropy: tuple[float, ...]  # (n,)
    calibration_layer: int = -1  # the layer whose PC1 tracks the analytic entropy best (|ρ|)
    # the t90s with a bootstrap interval over this run's prompts and sequences (absent from older files)
    t90_interval: T90Interval | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        C = len(self.steps)
        if C < 1 or list(self.steps) != sorted(set(self.steps)):
            raise ValueError(f"steps {self.steps} must be increasing and non-empty")
        for name in ("key_orth", "attn_entropy", "frame_tv", "value_pc1", "value_rho", "mae_paper", "mae_sample"):
            if len(getattr(self, name)) != C:
                raise ValueError(f"{name} has {len(getattr(self, name))} rows for {C} checkpoints")
        for name in ("final_pc1", "analytic_entropy", "final_model_entropy"):
            if len(getattr(self, name)) != self.n_probes:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries for {self.n_probes} probes")

    @property
    def frame_progress(self) -> np.ndarray:
        return frame_fraction(np.asarray(self.frame_tv))

    @property
    def precision_progress(self) -> np.ndarray:
        return precision_fraction(np.asarray(self.mae_sample))

    @property
    def t90_frame(self) -> float:
        """NaN when the attention patterns never differed from the final ones."""
        return t90(self.steps, self.frame_progress)

    @property
    def t90_precision(self) -> float:
        """NaN when the entropy error did not fall (MAE(final) ≥ MAE(0))."""
        return t90(self.steps, self.precision_progress)

    @property
    def dissociation(self) -> bool:
        """``t90_frame < t90_precision`` in this one run (False when either is undefined); not a test:
        across training seeds, :func:`geoprobe.windtunnel.frame.frame_precision`."""
        return self.t90_frame < self.t90_precision


def training_geometry(
    run: Path,
    spec: RunSpec,
    *,
    n_probes: int = 256,
    eval_n: int = 512,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    progress: Callable[[int, int], None] | None = None,
) -> TrainingGeometry:
    """Probe every checkpoint of a transformer run."""
    steps = list_checkpoints(run)
    if not steps:
        raise ValueError(f"no checkpoints in {run}")
    texts, analytic, _ = probe_prompts(spec.task_obj, n_probes, spec.train.seed)
    batch = eval_batch(spec.task_obj, eval_n, spec.train.seed)
    probes = []
    for i, s in enumerate(steps):
        probes.append(probe_checkpoint(checkpoint_dir(run, s), spec, texts, analytic, batch))
        if progress is not None:
            progress(i + 1, len(steps))
    final = probes[-1]
    tv = [float(0.5 * np.abs(p.patterns - final.patterns).sum(-1).mean()) for p in probes]
    # per prompt (mean over layers and heads of the (L, n, H) distances): the frame's bootstrap unit
    tv_prompts = np.stack([0.5 * np.abs(p.patterns - final.patterns).sum(-1).mean((0, 2)) for p in probes])
    spans = t90_interval(
        [p.step for p in probes],
        tv_prompts,
        np.stack([p.mae_sequences for p in probes]),
        n_resamples=n_resamples,
        confidence=confidence,
        seed=0,
    )
    best = int(np.nanargmax(np.abs(final.layer_rho)))
    rho = bootstrap_ci(
        (final.pc1[best], analytic),
        lambda a, b, axis=-1: np.abs(spearman(a, b, axis)),
        confidence=confidence,
        n_resamples=n_resamples,
        method="percentile",
        random_state=0,
    )
    return TrainingGeometry(
        steps=tuple(p.step for p in probes),
        n_probes=n_probes,
        key_orth=tuple(p.key_orth for p in probes),
        attn_entropy=tuple(p.attn_entropy for p in probes),
        frame_tv=tuple(tv),
        value_pc1=tuple(p.value_pc1 for p in probes),
        value_rho=tuple(p.value_rho for p in probes),
        mae_paper=tuple(p.mae_paper for p in probes),
        mae_sample=tuple(p.mae_sample for p in probes),
        final_layer_rho=final.layer_rho,
        calibration=rho,
        final_pc1=tuple(float(x) for x in final.pc1[best]),
        analytic_entropy=tuple(float(x) for x in analytic),
        final_model_entropy=tuple(float(x) for x in final.model_entropy),
        calibration_layer=best,
        t90_interval=spans,
    )
