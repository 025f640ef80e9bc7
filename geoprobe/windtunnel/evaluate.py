"""How close is a learner to the analytic posterior? Entropy MAE (two definitions), KL, ablations.

The model's predictive distribution at a prediction is its next-token softmax restricted to
the task's answer tokens and renormalised (``answer_mass`` records how much of the full
softmax those tokens held; a trained model puts ≈ 1 there).

* ``mae_paper`` — the paper's definition: average the model's and the analytic entropy curves
  over sequences first, then the mean over positions of |H̄_model(t) − H̄_Bayes(t)|.
* ``mae_sample`` — per prediction: mean over sequences and positions of |H_model − H_Bayes|
  (the stricter one; it cannot cancel errors between sequences).
* ``kl`` — mean KL(Bayes ‖ model) in bits (the paper's HMM metric).

Each carries a bootstrap CI over sequences (the unit that is drawn independently).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch
from jaxtyping import Float

from geoprobe.analysis.stats import Estimate, bootstrap_ci
from geoprobe.serial import Record
from geoprobe.windtunnel.tasks import Batch, Task, entropy_bits
from geoprobe.windtunnel.train import predict_logits, step_rng

_LN2 = math.log(2.0)
EVAL_SEED_OFFSET = 10_000_019  # evaluation draws never coincide with a training step's


def eval_batch(task: Task, n: int, seed: int, *, scored_only: bool = True) -> Batch:
    """Held-out sequences, restricted to the ``task.K`` scored predictions (the authors' bijection
    trains on one more, its query, which their evaluation does not score; ``scored_only=False``
    keeps it, for ``geoprobe.windtunnel.query``)."""
    batch = task.sample(n, step_rng(seed + EVAL_SEED_OFFSET, task.K))
    return batch.head(task.K) if scored_only else batch


def predictive(logits: Float[torch.Tensor, "B K vocab"], answer_ids: Any) -> tuple[np.ndarray, np.ndarray]:
    """(renormalised distribution over answers (B, K, A), mass the full softmax puts on them (B, K))."""
    logp = torch.log_softmax(logits.double(), dim=-1)[..., torch.as_tensor(answer_ids)]
    mass = logp.exp().sum(-1)
    return torch.softmax(logp, dim=-1).numpy(), mass.numpy()


def _batched_predictive(
    logits_at: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], batch: Batch, answer_ids: Any, batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """``predictive`` over ``batch`` in chunks; ``logits_at(ids, positions)`` gives (B, K, vocab) logits."""
    probs, mass = [], []
    pos = torch.as_tensor(batch.positions)
    with torch.inference_mode():
        for i in range(0, len(batch.ids), batch_size):
            p, m = predictive(logits_at(torch.as_tensor(batch.ids[i : i + batch_size]), pos), answer_ids)
            probs.append(p)
            mass.append(m)
    return np.concatenate(probs), np.concatenate(mass)


def model_predictive(
    model: torch.nn.Module, batch: Batch, answer_ids: Any, batch_size: int = 256
) -> tuple[np.ndarray, np.ndarray]:
    """A plain (un-hooked) model's predictive distributions on ``batch``."""
    return _batched_predictive(lambda ids, pos: predict_logits(model, ids, pos), batch, answer_ids, batch_size)


def kl_bits(p: Float[np.ndarray, "... A"], q: Float[np.ndarray, "... A"]) -> Float[np.ndarray, "..."]:
    """KL(p ‖ q) in bits; terms with p = 0 are 0, q is floored at 1e-300."""
    p = np.asarray(p, dtype=np.float64)
    q = np.maximum(np.asarray(q, dtype=np.float64), 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - np.log(q)), 0.0)
    return np.maximum(t.sum(-1), 0.0) / _LN2


def paper_mae(hm: Float[np.ndarray, "n K"], ht: Float[np.ndarray, "n K"]) -> float:
    """Entropy curves averaged over sequences first, then the mean |difference| over positions."""
    return float(np.abs(hm.mean(0) - ht.mean(0)).mean())


def paper_mae_ci(hm: np.ndarray, ht: np.ndarray, *, confidence: float, n_resamples: int, random_state: int) -> Estimate:
    """``paper_mae`` with a percentile bootstrap CI over sequences (resampled as weight vectors)."""
    n = hm.shape[0]
    value = paper_mae(hm, ht)
    if n < 2:
        return Estimate(value, value, value, confidence)
    rng = np.random.default_rng(random_state)
    w = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(n_resamples)]) / n
    stats = np.abs(w @ (hm - ht)).mean(1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(stats, [alpha, 1 - alpha])
    return Estimate(value, float(lo), float(hi), confidence)


@dataclass(frozen=True, eq=False)
class TunnelMetrics(Record):
    """A learner against the analytic posterior on ``n`` sequences of ``K`` predictions."""

    label: str
    K: int
    n: int
    mae_paper: Estimate
    mae_sample: Estimate
    kl: Estimate
    curve_model: tuple[float, ...]  # mean model entropy per position (bits)
    curve_bayes: tuple[float, ...]  # mean analytic entropy per position (bits)
    kl_curve: tuple[float, ...]
    answer_mass: float

    def __post_init__(self) -> None:
        for name in ("curve_model", "curve_bayes", "kl_curve"):
            v = tuple(float(x) for x in getattr(self, name))
            if len(v) != self.K:
                raise ValueError(f"{name} has {len(v)} positions, expected K = {self.K}")
            object.__setattr__(self, name, v)
        if self.n < 1 or self.K < 1:
            raise ValueError(f"n = {self.n} and K = {self.K} must be positive")
        if not 0.0 <= self.answer_mass <= 1.0 + 1e-9:
            raise ValueError(f"answer mass {self.answer_mass} outside [0, 1]")

    @property
    def mae_curve(self) -> tuple[float, ...]:
        return tuple(abs(a - b) for a, b in zip(self.curve_model, self.curve_bayes))


def metrics(
    label: str,
    probs: Float[np.ndarray, "n K A"],
    batch: Batch,
    mass: Float[np.ndarray, "n K"] | None = None,
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    random_state: int = 0,
) -> TunnelMetrics:
    """Compare predictive distributions ``probs`` with the batch's analytic posteriors."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.shape != batch.targets.shape:
        raise ValueError(f"predictions have shape {probs.shape}, the batch's posteriors {batch.targets.shape}")
    hm, ht = entropy_bits(probs), batch.entropy
    kl = kl_bits(batch.targets, probs)
    n, K = hm.shape
    kw = dict(confidence=confidence, n_resamples=n_resamples, random_state=random_state, method="percentile")
    return TunnelMetrics(
        label=label,
        K=K,
        n=n,
        mae_paper=paper_mae_ci(hm, ht, confidence=confidence, n_resamples=n_resamples, random_state=random_state),
        mae_sample=bootstrap_ci(np.abs(hm - ht).mean(1), **kw),
        kl=bootstrap_ci(kl.mean(1), **kw),
        curve_model=hm.mean(0),
        curve_bayes=ht.mean(0),
        kl_curve=kl.mean(0),
        answer_mass=float(np.clip(np.mean(mass), 0.0, 1.0)) if mass is not None else 1.0,
    )


# -- ablations through geoprobe's attention probe -------------------------------------------
@contextmanager
def zeroed_heads(loaded: Any, heads: dict[int, Sequence[int]]) -> Iterator[None]:
    """Zero the attention output z of ``heads[layer]`` (their slice of the input of W_O) in every
    forward pass of ``loaded.hf_model`` inside the block: an out-edit of geoprobe's attention
    function (``Probe.out_edits``), so it works on every architecture capture reads."""
    from geoprobe.models.architecture import editing

    def zero(which: Sequence[int]) -> Callable[[torch.Tensor], torch.Tensor]:
        idx = torch.as_tensor(list(which), dtype=torch.long)

        def fn(z: torch.Tensor) -> torch.Tensor:  # (batch, pos, head, d_v)
            out = z.clone()
            out[:, :, idx.to(z.device)] = 0.0
            return out

        return fn

    model_layer = loaded.layout.model_layers
    with editing(loaded.hf_model, loaded.arch, out_edits={model_layer[layer]: zero(h) for layer, h in heads.items()}):
        yield


def probed_predictive(
    loaded: Any, batch: Batch, answer_ids: Any, batch_size: int = 128
) -> tuple[np.ndarray, np.ndarray]:
    """``model_predictive`` of a loaded model's ``hf_model`` (so edits switched on around it,
    e.g. ``zeroed_heads``, apply)."""
    return model_predictive(loaded.hf_model, batch, answer_ids, batch_size)


@dataclass(frozen=True, eq=False)
class Ablations(Record):
    """MAE (paper definition, bits) with each attention layer and each head zeroed."""

    baseline: float
    baseline_sample: float
    layer_mae: tuple[float, ...]
    head_mae: tuple[tuple[float, ...], ...]  # [layer][head]
    layer_mae_sample: tuple[float, ...]
    head_mae_sample: tuple[tuple[float, ...], ...]

    def __post_init__(self) -> None:
        if len(self.head_mae) != len(self.layer_mae) or len(self.head_mae_sample) != len(self.layer_mae):
            raise ValueError("one row of head ablations per layer is required")

    @property
    def hypothesis_head(self) -> int:
        """The layer-0 head whose removal costs most (per-sample MAE)."""
        return int(np.argmax(self.head_mae_sample[0]))

    @property
    def hypothesis_head_is_top(self) -> bool:
        """Is that head the most damaging head of the whole model?"""
        arr = np.array(self.head_mae_sample)
        return bool(arr.max() == arr[0].max())


def ablations(loaded: Any, task: Task, batch: Batch) -> Ablations:
    """Zero each attention layer (all its heads) and each head in turn (``zeroed_heads``)."""
    L, H = loaded.layout.n_layers, loaded.layout.n_heads
    ht = batch.entropy

    def score(heads: dict[int, Sequence[int]]) -> tuple[float, float]:
        with zeroed_heads(loaded, heads):
            p, _ = probed_predictive(loaded, batch, task.answer_ids)
        hm = entropy_bits(p)
        return paper_mae(hm, ht), float(np.abs(hm - ht).mean())

    base = score({})
    layers = [score({layer: range(H)}) for layer in range(L)]
    heads = [[score({layer: [h]}) for h in range(H)] for layer in range(L)]
    return Ablations(
        base[0],
        base[1],
        tuple(x[0] for x in layers),
        tuple(tuple(x[0] for x in r) for r in heads),
        tuple(x[1] for x in layers),
        tuple(tuple(x[1] for x in r) for r in heads),
    )
