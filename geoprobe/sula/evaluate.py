"""The model's side of SULA: its distribution over the two label tokens at the query.

For every prompt the final position's next-token log-probabilities (left-padded batches through
the plain model with ``logits_to_keep=1``, exactly as ``geoprobe.sampling.candidate_entropies``
runs them) give ``log P(L1)`` and ``log P(L2)`` over the whole vocabulary. Then

* label mass ``m = P(L1) + P(L2)`` (how much of its next-token distribution the model puts on
  the two labels at all);
* model predictive ``q̂ = P(L1) / m`` (renormalised over the two labels) and its entropy
  ``Ĥ = h(q̂)`` in bits, compared with an analytic target H: the **predictive entropy**
  h(a p + (1 − a)(1 − p)) or the **posterior entropy** h(p) (``TARGETS``; docs/sula.md).

Metrics (paired bootstrap over prompts, ``scipy.stats.bootstrap`` BCa via
``geoprobe.analysis.stats``): MAE = mean |Ĥ − H| (bits), Spearman ρ and Pearson r of
(Ĥ, H), mean label mass, and per k the mean Ĥ and mean H with CIs. Both targets are
increasing functions of |n1 − n2| for a fixed agreement, so their ranks are the same and
every Spearman ρ is identical for the two; MAE, Pearson r and the per-k means differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.alignment import pearson, spearman
from geoprobe.analysis.stats import Estimate, bootstrap_ci
from geoprobe.serial import Record
from geoprobe.sula.config import SulaError
from geoprobe.sula.task import binary_entropy_bits

#: the two analytic targets, named as in sula.json, the report and docs/sula.md
PREDICTIVE = "predictive entropy"  # h(a p + (1 − a)(1 − p)): the query label's predictive, label noise included
POSTERIOR = "posterior entropy"  # h(p), p = P(y = L1 | examples): the paper's H_Bayes (§5.2), the authors' target
TARGETS: tuple[str, str] = (PREDICTIVE, POSTERIOR)


def label_logprobs(
    model: Any,
    texts: Sequence[str],
    label_ids: Sequence[int],
    *,
    batch_size: int = 16,
    progress: Callable[[int, int], None] | None = None,
) -> Float[np.ndarray, "n labels"]:
    """log P(label token | prompt) at every prompt's final position (full-vocabulary softmax)."""
    import torch

    from geoprobe.capture.run import final_position_logits, tokenize

    ids, _ = tokenize(model, list(texts), None)
    cols = torch.tensor(list(label_ids), dtype=torch.long)
    out = np.full((len(ids), len(label_ids)), np.nan)
    done = 0
    for rows, logits in final_position_logits(model, ids, batch_size):
        logp = torch.log_softmax(logits, dim=-1)
        lp = logp[:, cols.to(logp.device)].double().cpu().numpy()
        if not np.all(np.isfinite(lp)):
            raise SulaError("non-finite label log-probability in the SULA forward pass; rerun with --dtype float32")
        out[rows] = lp
        done += len(rows)
        if progress is not None:
            progress(done, len(ids))
    return out


def label_distribution(logprobs: Float[np.ndarray, "n 2"]) -> dict[str, np.ndarray]:
    """From (log P(L1), log P(L2)): the renormalised P(L1), its entropy (bits) and the mass."""
    lp = np.asarray(logprobs, dtype=np.float64)
    if lp.ndim != 2 or lp.shape[1] != 2:
        raise ValueError(f"label log-probabilities must be (n, 2), got {lp.shape}")
    top = lp.max(axis=1, keepdims=True)
    w = np.exp(lp - top)
    q = w[:, 0] / w.sum(axis=1)
    mass = np.exp(lp).sum(axis=1)
    return {"predictive": q, "entropy": binary_entropy_bits(q), "mass": mass}


@dataclass(frozen=True, eq=False)
class SulaMetrics(Record):
    """Calibration of the model's label entropy against one analytic target (bits): ``target``
    is ``"predictive entropy"`` or ``"posterior entropy"`` (None in files from 0.1.0, which
    hold the predictive entropy only).

    ``n`` prompts are scored (MAE, ρ, r and the per-k means are over them); ``n_excluded`` more
    were left out because their label mass is below the threshold (``SulaConfig.min_label_mass``;
    None in files from before it, where every prompt is scored). ``label_mass`` is the mean over
    all ``n + n_excluded`` prompts."""

    n: int
    mae: Estimate
    spearman: Estimate
    pearson: Estimate
    label_mass: Estimate
    k_values: tuple[int, ...]
    model_per_k: tuple[Estimate, ...]
    bayes_per_k: tuple[Estimate, ...]
    target: str | None = field(default=None, metadata={"omit_none": True})
    n_excluded: int | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        if self.n_excluded is not None and self.n_excluded < 0:
            raise ValueError(f"n_excluded = {self.n_excluded} prompts left out must be >= 0")
        object.__setattr__(self, "k_values", tuple(int(k) for k in self.k_values))
        object.__setattr__(self, "model_per_k", tuple(self.model_per_k))
        object.__setattr__(self, "bayes_per_k", tuple(self.bayes_per_k))
        if self.target is not None and self.target not in TARGETS:
            raise ValueError(f"target {self.target!r} is not one of {TARGETS}")
        if not len(self.k_values) == len(self.model_per_k) == len(self.bayes_per_k):
            raise ValueError(
                f"{len(self.k_values)} values of k but {len(self.model_per_k)} / "
                f"{len(self.bayes_per_k)} per-k estimates"
            )


def _mean_ci(x: np.ndarray, confidence: float, n_resamples: int, rng: np.random.Generator) -> Estimate:
    if x.size == 0:
        return Estimate(math.nan, math.nan, math.nan, confidence)
    return bootstrap_ci(x, np.mean, confidence=confidence, n_resamples=n_resamples, random_state=rng)


def calibration_metrics(
    k: Sequence[int],
    bayes_entropy: Sequence[float],
    model_entropy: Sequence[float],
    label_mass: Sequence[float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    random_state: int | np.random.Generator | None = 0,
    target: str | None = None,
    min_label_mass: float | None = None,
) -> SulaMetrics:
    """MAE, correlations, mean label mass and per-k means, each with a bootstrap CI over prompts;
    ``bayes_entropy`` is the analytic target named by ``target`` (``PREDICTIVE`` / ``POSTERIOR``).

    With ``min_label_mass``, only the prompts whose label mass is at least that are scored (MAE,
    correlations, per-k means; NaN where none or, for the correlations, fewer than 3 are), and
    ``n_excluded`` counts the others; the mean label mass is over every prompt."""
    k = np.asarray(k, dtype=np.int64)
    hb = np.asarray(bayes_entropy, dtype=np.float64)
    hm = np.asarray(model_entropy, dtype=np.float64)
    mass = np.asarray(label_mass, dtype=np.float64)
    n = hb.size
    if not (k.shape == hb.shape == hm.shape == mass.shape == (n,)) or n < 1:
        raise ValueError(
            f"k, entropies and mass must be equal-length 1-D arrays, got "
            f"{k.shape}, {hb.shape}, {hm.shape}, {mass.shape}"
        )
    if not (np.all(np.isfinite(hb)) and np.all(np.isfinite(hm)) and np.all(np.isfinite(mass))):
        raise ValueError("entropies or label mass contain NaN or Inf")
    rng = np.random.default_rng(random_state)
    kw = dict(confidence=confidence, n_resamples=n_resamples)
    keep = np.ones(n, dtype=bool) if min_label_mass is None else mass >= min_label_mass
    ks = tuple(int(x) for x in np.unique(k))
    k, hb, hm = k[keep], hb[keep], hm[keep]
    mae = _mean_ci(np.abs(hm - hb), confidence, n_resamples, rng)
    if hb.size >= 3:
        rho = bootstrap_ci((hm, hb), spearman, random_state=rng, **kw)
        r = bootstrap_ci((hm, hb), pearson, random_state=rng, **kw)
    else:
        rho = r = Estimate(math.nan, math.nan, math.nan, confidence)
    model_k = tuple(_mean_ci(hm[k == v], confidence, n_resamples, rng) for v in ks)
    bayes_k = tuple(_mean_ci(hb[k == v], confidence, n_resamples, rng) for v in ks)
    return SulaMetrics(
        n=int(keep.sum()),
        mae=mae,
        spearman=rho,
        pearson=r,
        label_mass=_mean_ci(mass, confidence, n_resamples, rng),  # over every prompt, scored or not
        k_values=ks,
        model_per_k=model_k,
        bayes_per_k=bayes_k,
        target=target,
        n_excluded=None if min_label_mass is None else int(n - keep.sum()),
    )
