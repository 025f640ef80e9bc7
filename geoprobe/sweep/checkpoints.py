"""The arrays of one checkpoint of a series, and what a paired bootstrap over the series' shared prompts
reads from them (geoprobe.sweep.contrasts, geoprobe.sweep.emergence; docs/sweep.md "Paired contrasts,
emergence and tracking").

:class:`CheckpointArrays` holds what a scan cell saved (``results.json`` and ``capture/``) in arrays, so
the statistics can be computed, and tested, without a sweep. :func:`checkpoint_statistics` gives, for
one checkpoint and one set of resampled prompt indices (the same for every checkpoint of the series):

* per layer, an estimate and its bootstrap draws (``Draws``) of
  ``pc1`` (PC1 share of the standardised final-token values, PCA recomputed per resample),
  ``alignment_spearman`` (Spearman ρ of the oriented PC1 coordinate of results.json with next-token
  entropy), ``attention_entropy`` (mean over prompts of the head-mean entropy, bits),
  ``key_orthogonality`` (mean |cos| of W_K columns over the heads; resampled over heads, not prompts),
  and, against the final checkpoint of the same run on the same prompts, ``cka_to_final`` (linear CKA
  of the value matrices), ``pc1_angle_to_final`` (degrees between the value PC1 axes),
  ``subspace_angle_to_final`` (the largest principal angle between the top-k value subspaces, degrees)
  and ``routing_stability`` (1 − Jensen–Shannon divergence of each head's final-token attention,
  averaged over prompts and heads; needs ``attention = "distribution"``);
* ``focusing_reduction`` (layer None): % entropy reduction from the first to the last layer;
* per head (own rows with a percentile interval, no contrasts): ``routing_stability``,
  ``attention_entropy`` and ``key_orthogonality`` (no interval: one number per head).

Metrics that need an eigendecomposition per resample (``PCA_METRICS``) are drawn on the first
``pca_resamples`` resamples only (the scan's own convention: its PCA spectra take 200
resamples, its means and correlations 1,000); their draws beyond are NaN."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from jaxtyping import Float, Int

from geoprobe.analysis.paired import (
    axis_angles,
    cka_resampled,
    identity_indices,
    mean_resampled,
    pca_resampled,
    percentile_interval,
    reduction_resampled,
    spearman_resampled,
    subspace_angles_batched,
)
from geoprobe.analysis.stats import one_blas_thread
from geoprobe.analysis.tracking import linear_cka, linear_cka_resampled, routing_stability

#: metrics drawn on the first ``pca_resamples`` resamples (an eigenproblem each)
PCA_METRICS = ("pc1", "pc1_angle_to_final", "subspace_angle_to_final")
#: above this many prompts CKA's resamples are computed one by one (tracking.linear_cka_resampled), not from
#: the n × n Gram matrices at once (paired.cka_resampled: 32 MB each at 2,000)
_CKA_GRAM = 2000
#: the per-layer metrics of a checkpoint, in row order (``focusing_reduction`` has layer None)
LAYER_METRICS = (
    "pc1",
    "alignment_spearman",
    "attention_entropy",
    "key_orthogonality",
    "cka_to_final",
    "pc1_angle_to_final",
    "subspace_angle_to_final",
    "routing_stability",
)
#: (metric, layer, head): a row's identity within a checkpoint
Key = tuple[str, int | None, int | None]


@dataclass(frozen=True, eq=False)
class CheckpointArrays:
    """One checkpoint's arrays on the series' shared prompts (n prompts, L layers, H heads).

    ``values``: one (n, D) value matrix per layer (heads concatenated), or None (no capture saved);
    ``aligned``: (L, n) PC1 coordinates oriented to grow with next-token entropy (results.json);
    ``next_entropy``: (n,) bits; ``per_prompt``: (L, n) head-mean attention entropy (focusing);
    ``head_entropy``: (L, n, H) per-head entropy or None; ``per_head``: (L, H) key |cos| (NaN: a head
    the layer lacks) or None; ``patterns``: one (n, H, T) final-token attention distribution per layer,
    or None; ``prompt_hash``: results.json ``prompt_set.hash``."""

    cell: str
    step: int | None
    run: str | None
    layers: tuple[int, ...]
    values: tuple[np.ndarray, ...] | None
    aligned: np.ndarray | None
    next_entropy: np.ndarray | None
    per_prompt: np.ndarray | None
    head_entropy: np.ndarray | None = None
    per_head: np.ndarray | None = None
    patterns: tuple[np.ndarray, ...] | None = None
    prompt_hash: str | None = None

    @property
    def n(self) -> int:
        for a in (self.next_entropy, self.per_prompt, self.aligned):
            if a is not None:
                return int(np.shape(a)[-1])
        return 0 if self.values is None else int(self.values[0].shape[0])

    @classmethod
    def from_directory(
        cls, directory: Path, *, cell: str, step: int | None, run: str | None, light: bool = False, result: Any = None
    ) -> "CheckpointArrays":
        """Read a scan cell: its results.json and, where it saved one and not ``light``, its capture/ (values,
        per-head attention entropy, and the attention distribution when the scan kept it). ``result``: its
        ScanResult when already read."""
        from geoprobe.capture.result import Capture
        from geoprobe.recipes import load_result

        result = load_result(directory / "results.json") if result is None else result
        cap = None if result.capture_dir is None or light else Capture.load(directory / result.capture_dir)
        m, a, f, o = result.manifold, result.alignment, result.focusing, result.orthogonality
        aligned = None
        if m is not None and a is not None:
            aligned = np.asarray(m.pc1_coords, dtype=np.float64) * np.asarray(a.orientation, dtype=np.float64)[:, None]
        values = patterns = heads = None
        if cap is not None and cap.values is not None:
            values = tuple(np.asarray(v, dtype=np.float64).reshape(cap.n_prompts, -1) for v in cap.per_layer("values"))
        if cap is not None and cap.attn_pattern is not None:
            patterns = tuple(cap.per_layer("attn_pattern"))
        if cap is not None and cap.layout.uniform:
            heads = np.asarray(cap.attn_entropy, dtype=np.float64)
        ps = result.prompt_set or {}
        return cls(
            cell=cell,
            step=step,
            run=run,
            layers=tuple(result.layers),
            values=values,
            aligned=aligned,
            next_entropy=None if m is None else np.asarray(m.next_entropy, dtype=np.float64),
            per_prompt=None if f is None else np.asarray(f.per_prompt, dtype=np.float64),
            head_entropy=heads,
            per_head=None if o is None else np.asarray(o.per_head, dtype=np.float64),
            patterns=patterns,
            prompt_hash=ps.get("hash") if isinstance(ps, dict) else None,
        )


@dataclass(frozen=True, eq=False)
class Draws:
    """An estimate and its B bootstrap draws (NaN where a draw was not made), over ``n`` units."""

    estimate: float
    draws: np.ndarray
    n: int


@dataclass(frozen=True, eq=False)
class Own:
    """A per-head row of one checkpoint: estimate and percentile interval (None: none), over ``n`` units."""

    estimate: float
    low: float | None
    high: float | None
    n: int


@dataclass(frozen=True, eq=False)
class CheckpointStats:
    """What :func:`checkpoint_statistics` gives for one checkpoint: per-layer ``draws`` and per-head ``own``."""

    cell: str
    step: int | None
    run: str | None
    draws: dict[Key, Draws]
    own: dict[Key, Own]


@dataclass(frozen=True, eq=False)
class PcaDraws:
    """One layer's PC1 share and top-k loadings, of the data (``share``, ``loads``: (k, D)) and of each of
    the first P resamples (``share_draws`` (P,), ``load_draws`` (P, k, D))."""

    share: float
    loads: np.ndarray
    share_draws: np.ndarray
    load_draws: np.ndarray


def pca_draws(x: Float[np.ndarray, "n D"], idx: Int[np.ndarray, "P n"], k: int) -> PcaDraws:
    """:func:`geoprobe.analysis.paired.pca_resampled` of the data and of the resamples ``idx``."""
    s, v = pca_resampled(x, identity_indices(x.shape[0]), k)
    sd, vd = pca_resampled(x, idx, k)
    return PcaDraws(float(s[0]), v[0], sd, vd)


def _padded(a: np.ndarray, b: int) -> np.ndarray:
    out = np.full(b, np.nan)
    out[: len(a)] = a
    return out


def _own(est: float, dr: np.ndarray, n: int, confidence: float) -> Own:
    lo, hi = percentile_interval(dr, confidence)
    return Own(float(est), float(lo), float(hi), n)


def checkpoint_statistics(
    arrays: CheckpointArrays,
    idx: Int[np.ndarray, "B n"],
    head_idx: Int[np.ndarray, "B H"] | None,
    *,
    final: CheckpointArrays | None = None,
    pca: list[PcaDraws | None] | None = None,
    final_pca: list[PcaDraws | None] | None = None,
    pca_resamples: int = 200,
    k: int = 3,
    confidence: float = 0.95,
) -> CheckpointStats:
    """Every statistic of one checkpoint (module docs) on the resampled prompts ``idx`` (and heads
    ``head_idx``, for key orthogonality), the tracking metrics against ``final`` (the last checkpoint of
    the same run; None: none). ``pca`` / ``final_pca``: the layers' :func:`pca_draws` when already made
    (the final checkpoint's are made once for its whole run; made here when not given)."""
    b, n = idx.shape
    p_idx = idx[:pca_resamples]
    one = identity_indices(n)
    draws: dict[Key, Draws] = {}
    own: dict[Key, Own] = {}
    a = arrays
    with one_blas_thread():
        if a.values is not None and pca is None:
            pca = [pca_draws(x, p_idx, k) for x in a.values]
        if final is not None and final.values is not None and final_pca is None:
            final_pca = pca if final is a else [pca_draws(x, p_idx, k) for x in final.values]
        for i, layer in enumerate(a.layers):
            if pca is not None and pca[i] is not None:
                pd = pca[i]
                draws[("pc1", layer, None)] = Draws(pd.share, _padded(pd.share_draws, b), n)
            if a.aligned is not None and a.next_entropy is not None:
                est = spearman_resampled(a.aligned[i], a.next_entropy, one)[0]
                draws[("alignment_spearman", layer, None)] = Draws(
                    float(est), spearman_resampled(a.aligned[i], a.next_entropy, idx), n
                )
            if a.per_prompt is not None:
                draws[("attention_entropy", layer, None)] = Draws(
                    float(a.per_prompt[i].mean()), mean_resampled(a.per_prompt[i], idx), n
                )
            if a.head_entropy is not None:
                e = a.head_entropy[i].T  # (H, n)
                for h, dr in enumerate(mean_resampled(e, idx)):
                    own[("attention_entropy", layer, h)] = _own(e[h].mean(), dr, n, confidence)
            if a.per_head is not None:
                row = a.per_head[i]
                live = np.flatnonzero(np.isfinite(row))
                hd = np.full(b, np.nan) if head_idx is None else np.nanmean(row[head_idx], axis=1)
                draws[("key_orthogonality", layer, None)] = Draws(float(row[live].mean()), hd, live.size)
                for h in live:
                    own[("key_orthogonality", layer, int(h))] = Own(float(row[h]), None, None, 1)
            if final is not None:
                _tracking(a, final, i, layer, idx, pca, final_pca, draws, own, confidence)
        if a.per_prompt is not None and a.per_prompt.shape[0] >= 1:
            first, last = a.per_prompt[0], a.per_prompt[-1]
            est = reduction_resampled(first, last, one)[0]
            draws[("focusing_reduction", None, None)] = Draws(float(est), reduction_resampled(first, last, idx), n)
    return CheckpointStats(a.cell, a.step, a.run, draws, own)


def _tracking(
    a: CheckpointArrays,
    final: CheckpointArrays,
    i: int,
    layer: int,
    idx: np.ndarray,
    pca: list[PcaDraws | None] | None,
    final_pca: list[PcaDraws | None] | None,
    draws: dict[Key, Draws],
    own: dict[Key, Own],
    confidence: float,
) -> None:
    """The metrics of layer ``i`` against the final checkpoint's same layer (module docs)."""
    b, n = idx.shape
    if a.values is not None and final.values is not None and a.values[i].shape[1] == final.values[i].shape[1]:
        x, y = a.values[i], final.values[i]
        cka = cka_resampled(x, y, idx) if n <= _CKA_GRAM else linear_cka_resampled(x, y, idx)
        draws[("cka_to_final", layer, None)] = Draws(linear_cka(x, y), cka, n)
        mine, theirs = (pca or [None] * (i + 1))[i], (final_pca or [None] * (i + 1))[i]
        if mine is not None and theirs is not None:
            est = float(axis_angles(mine.loads[0], theirs.loads[0]))
            dr = axis_angles(mine.load_draws[:, 0], theirs.load_draws[:, 0])
            draws[("pc1_angle_to_final", layer, None)] = Draws(est, _padded(dr, b), n)
            k = min(len(mine.loads), len(theirs.loads))
            est = float(subspace_angles_batched(mine.loads[None, :k], theirs.loads[None, :k]).max())
            dr = subspace_angles_batched(mine.load_draws[:, :k], theirs.load_draws[:, :k]).max(axis=-1)
            draws[("subspace_angle_to_final", layer, None)] = Draws(est, _padded(dr, b), n)
    if a.patterns is not None and final.patterns is not None:
        p, q = a.patterns[i], final.patterns[i]
        t = min(p.shape[-1], q.shape[-1])
        if p.shape[:2] == q.shape[:2] and not (p[..., t:].any() or q[..., t:].any()):
            rs = routing_stability(p[..., :t], q[..., :t])  # (n, H)
            draws[("routing_stability", layer, None)] = Draws(float(rs.mean()), mean_resampled(rs.mean(axis=1), idx), n)
            for h, dr in enumerate(mean_resampled(rs.T, idx)):
                own[("routing_stability", layer, h)] = _own(rs[:, h].mean(), dr, n, confidence)


def finite(x: Any) -> float | None:
    """A float for a table cell: None for None or NaN."""
    return None if x is None or not math.isfinite(float(x)) else float(x)
