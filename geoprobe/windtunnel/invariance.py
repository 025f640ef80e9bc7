"""Semantic invariance (arXiv 2512.22471, Figure 8): a learner's calibration before and after the
HMM's hidden-state labels are permuted.

Relabelling the states by a permutation σ (state i is called σ(i)) gives another HMM with the same
observations: T'[σ(i), σ(j)] = T[i, j], E'[σ(i), o] = E[i, o], and its filtering posterior is the old
one relabelled, p'(σ(i)) = p(i). The prompt changes (the header's values move to other entries), the
observations do not, and the answer the model must give moves to other answer tokens. A learner that
tracks the HMM's structure rather than the states' names is *equivariant*: its predictive on the
relabelled prompt is its old predictive relabelled.

:func:`semantic_invariance` compares, per sequence (one HMM each), the calibration error before and
after (mean over positions of |H_model − H_Bayes|, bits; the paper's Figure 8 plots these against
each other, points on y = x), and measures equivariance directly: the total-variation distance between
the predictive on the relabelled prompt and the old predictive relabelled (0 for an exactly
equivariant learner). The second measure is needed because entropy does not see labels: a learner that
ignored the relabelling and kept its old answers would keep its entropy error exactly, but not its TV.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from jaxtyping import Float, Int

from geoprobe.analysis.stats import Estimate, bootstrap_ci
from geoprobe.serial import Record
from geoprobe.windtunnel.evaluate import kl_bits, model_predictive
from geoprobe.windtunnel.tasks import Batch, HMMTask, entropy_bits, forward_posterior

#: offset of the generator that draws the relabelling permutations from the evaluation seed
PERMUTATION_SEED_OFFSET = 7_000_003
#: sequences scored before and after relabelling (at most; the first of the evaluation batch)
MAX_SEQUENCES = 1000


def relabel(p: Float[np.ndarray, "n K S"], perm: Int[np.ndarray, "n S"]) -> Float[np.ndarray, "n K S"]:
    """Distributions over states relabelled: ``out[b, t, perm[b, i]] = p[b, t, i]``."""
    p = np.asarray(p, dtype=np.float64)
    out = np.empty_like(p)
    np.put_along_axis(out, np.broadcast_to(np.asarray(perm)[:, None, :], p.shape), p, axis=-1)
    return out


def random_permutations(n: int, S: int, rng: np.random.Generator) -> Int[np.ndarray, "n S"]:
    """``n`` uniformly random permutations of ``S`` labels, none the identity."""
    perms = np.argsort(rng.random((n, S)), axis=1)
    ident = np.arange(S)
    for b in np.flatnonzero((perms == ident).all(1)):
        while (perms[b] == ident).all():
            perms[b] = rng.permutation(S)
    return perms


def rename_states(
    T: Float[np.ndarray, "n S S"], E: Float[np.ndarray, "n S V"], perm: Int[np.ndarray, "n S"]
) -> tuple[np.ndarray, np.ndarray]:
    """(T', E') of the HMMs with state i renamed ``perm[b, i]``: T'[σ(i), σ(j)] = T[i, j], E'[σ(i), o] = E[i, o]."""
    inv = np.argsort(np.asarray(perm), axis=1)  # new name -> old
    T2 = np.take_along_axis(np.take_along_axis(np.asarray(T), inv[:, :, None], 1), inv[:, None, :], 2)
    return T2, np.take_along_axis(np.asarray(E), inv[:, :, None], 1)


def relabel_batch(task: Any, batch: Batch, perm: Int[np.ndarray, "n S"]) -> Batch:
    """The batch's HMMs with state i renamed ``perm[b, i]``: the header's values moved to their new
    entries, the same observations, the posteriors recomputed by the forward algorithm from the
    relabelled header (and checked against the old ones relabelled, to 1e-12). ``task``: geoprobe's
    :class:`HMMTask` (either header), or a task with ``decode(ids) -> (T, E, obs)`` in hundredths and
    ``encode(T, E, obs) -> ids`` (the authors' token format)."""
    perm = np.asarray(perm, dtype=np.int64)
    if hasattr(task, "encode") and hasattr(task, "decode"):
        T0, E0, obs = (np.stack(x) for x in zip(*(task.decode(r) for r in batch.ids)))
        T2, E2 = rename_states(T0, E0, perm)
        ids = task.encode(T2, E2, obs)
        T, E, obs2 = (np.stack(x) for x in zip(*(task.decode(r) for r in ids)))
        ok = np.array_equal(T, T2) and np.array_equal(E, E2) and np.array_equal(obs, obs2)
        T, E = T / 100.0, E / 100.0
    else:
        ids, T, E, obs = _relabel_geoprobe(task, batch, perm)
        ok = True
    if not ok:
        raise ValueError(f"relabelling does not round-trip through this task's tokens ({task.describe()})")
    targets = forward_posterior(T, E, obs)
    if not np.allclose(targets, relabel(batch.targets, perm), atol=1e-12, rtol=0):
        raise ValueError(f"the relabelled posterior is not the old one relabelled ({task.describe()})")
    return Batch(ids, targets, batch.positions, np.take_along_axis(perm, batch.labels, 1))


def _relabel_geoprobe(task: HMMTask, batch: Batch, perm: np.ndarray) -> tuple[np.ndarray, ...]:
    """geoprobe's header: move each value token to its renamed entry; (ids, T, E, observations)."""
    S, V = task.S, task.V
    n_entries = S * S + S * V
    per_entry = (task.header_len - 2) // n_entries
    pos = 1 + per_entry * np.arange(n_entries) + (per_entry - 1)  # where each entry's value token sits
    i, j = np.divmod(np.arange(S * S), S)
    si, o = np.divmod(np.arange(S * V), V)
    src = np.concatenate([i * S + j, S * S + si * V + o])  # old flat entry
    rows = np.arange(batch.ids.shape[0])[:, None]
    dst = np.concatenate([perm[:, i] * S + perm[:, j], S * S + perm[:, si] * V + o], axis=1)  # its new entry
    ids = batch.ids.copy()
    ids[rows, pos[dst]] = batch.ids[rows, pos[src]]
    T, E = (np.stack(x) for x in zip(*(task.decode_header(r) for r in ids)))
    T0, E0 = (np.stack(x) for x in zip(*(task.decode_header(r) for r in batch.ids)))
    want_T, want_E = rename_states(T0, E0, perm)
    if not (np.array_equal(T, want_T) and np.array_equal(E, want_E)):
        raise ValueError(f"relabelling does not round-trip through this task's header ({task.describe()})")
    return ids, T, E, batch.ids[:, batch.positions] - task.vocab.index("o0")


@dataclass(frozen=True, eq=False)
class SemanticInvariance(Record):
    """One learner's calibration before vs after relabelling the hidden states (``n`` sequences, ``K``
    predictions each)."""

    label: str
    K: int
    n: int
    error_before: tuple[float, ...]  # per sequence: mean over positions of |H_model − H_Bayes| (bits)
    error_after: tuple[float, ...]
    change: Estimate  # mean of (after − before) over sequences, 95 % percentile bootstrap
    equivariance_tv: Estimate  # mean TV(predictive after, predictive before relabelled) over predictions
    kl_before: float  # mean KL(Bayes ‖ model), bits
    kl_after: float

    def __post_init__(self) -> None:
        for name in ("error_before", "error_after"):
            v = tuple(float(x) for x in getattr(self, name))
            if len(v) != self.n:
                raise ValueError(f"{name} has {len(v)} sequences, expected n = {self.n}")
            object.__setattr__(self, name, v)

    @property
    def mean_before(self) -> float:
        return float(np.mean(self.error_before))

    @property
    def mean_after(self) -> float:
        return float(np.mean(self.error_after))


def semantic_invariance(
    label: str,
    before: Float[np.ndarray, "n K S"],
    after: Float[np.ndarray, "n K S"],
    posterior: Float[np.ndarray, "n K S"],
    perm: Int[np.ndarray, "n S"],
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    random_state: int = 0,
) -> SemanticInvariance:
    """Compare a learner's predictive ``before`` (original prompts) and ``after`` (prompts with state i
    renamed ``perm[b, i]``, in the new labels) with the exact posterior (``posterior``, original labels)."""
    before, after, posterior = (np.asarray(x, dtype=np.float64) for x in (before, after, posterior))
    if not before.shape == after.shape == posterior.shape or before.ndim != 3:
        raise ValueError(f"shapes differ: before {before.shape}, after {after.shape}, posterior {posterior.shape}")
    if np.asarray(perm).shape != (before.shape[0], before.shape[2]):
        raise ValueError(f"perm has shape {np.asarray(perm).shape}, expected {(before.shape[0], before.shape[2])}")
    post_after = relabel(posterior, perm)
    err_b = np.abs(entropy_bits(before) - entropy_bits(posterior)).mean(1)
    err_a = np.abs(entropy_bits(after) - entropy_bits(post_after)).mean(1)
    tv = 0.5 * np.abs(after - relabel(before, perm)).sum(-1).mean(1)
    kw: dict[str, Any] = dict(
        confidence=confidence, n_resamples=n_resamples, random_state=random_state, method="percentile"
    )
    n, K, _ = before.shape
    return SemanticInvariance(
        label=label,
        K=K,
        n=n,
        error_before=tuple(err_b),
        error_after=tuple(err_a),
        change=bootstrap_ci(err_a - err_b, **kw),
        equivariance_tv=bootstrap_ci(tv, **kw),
        kl_before=float(kl_bits(posterior, before).mean()),
        kl_after=float(kl_bits(post_after, after).mean()),
    )


def tunnel_invariance(
    label: str,
    model: Any,
    task: Any,
    batch: Batch,
    before: Float[np.ndarray, "n K S"],
    seed: int,
) -> SemanticInvariance:
    """Figure 8 for a trained learner: relabel the first :data:`MAX_SEQUENCES` HMMs of the evaluation
    ``batch`` (a random non-identity permutation each, drawn from ``seed``), run ``model`` on them and
    compare with its predictive ``before`` on the originals."""
    n = min(len(batch.ids), MAX_SEQUENCES)
    sub = Batch(batch.ids[:n], batch.targets[:n], batch.positions, batch.labels[:n])
    perm = random_permutations(n, task.S, np.random.default_rng(seed + PERMUTATION_SEED_OFFSET))
    moved = relabel_batch(task, sub, perm)
    after, _ = model_predictive(model, moved, task.answer_ids)
    return semantic_invariance(label, np.asarray(before)[:n], after, sub.targets, perm)
