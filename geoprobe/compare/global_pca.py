"""A PCA basis shared by several models: per-model standardised value vectors, concatenated.

For models m = 1..M scanned on the same n prompts (rows aligned by exact prompt text), let
``X_m`` (n × D_m) be the final-layer value vectors (KV heads concatenated). Each block is
z-scored column by column (centred, divided by its standard deviation over the n prompts;
constant columns dropped, leaving D_m' columns) and divided by √D_m', so that every model
carries the same total variance (1) whatever its width::

    Z = [ z(X_1) / √D_1' | … | z(X_M) / √D_M' ]        (n × Σ D_m')

The global PCA is the PCA of Z (float64; component signs fixed as in ``ValueManifold``: the
loading of largest |value| is positive). Reported: explained-variance ratios; global PC1/PC2
coordinates per prompt; each model's **loading share** of PC1 and PC2 ``s_{m,c} = Σ_{j ∈ m} v_{c,j}²``
(shares of a component sum to 1; 1/M each when all models load equally); per model the
Spearman ρ between its own PC1 coordinate (its own standardised PCA, ``ValueManifold``) and the
global PC1, and between the global PC1 and its next-token entropy (bootstrap CIs over prompts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from jaxtyping import Float

from geoprobe import provenance
from geoprobe.analysis.manifold import frozen_array
from geoprobe.analysis.stats import Estimate, RandomState, bootstrap_ci, constant_columns, zscore
from geoprobe.serial import Record
from geoprobe.text import number

N_RATIOS = 10  # leading explained-variance ratios kept
MIN_SHARED = 10  # fewer shared prompts: no global PCA


def shared_prompts_hash(prompts: Sequence[str]) -> str:
    return provenance.prompts_hash(prompts)


@dataclass(frozen=True, eq=False)
class GlobalPCA(Record):
    """The global PCA of several models' standardised final-layer values (module docstring).

    ``coords`` (n, 2): global PC1, PC2 per shared prompt; ``entropy_mean`` (n,): next-token
    entropy (bits) averaged over the models; ``loading_share`` (M, 2): each model's share of
    PC1 and PC2; ``rho_own`` / ``rho_entropy``: one Estimate per model. Equality compares
    ``to_dict()``."""

    models: tuple[str, ...]
    layers: tuple[int, ...]  # the model layer used, per model
    prompts: tuple[str, ...]
    d: tuple[int, ...]  # raw value width per model (Hkv · d_head)
    d_kept: tuple[int, ...]  # non-constant columns per model
    explained: tuple[float, ...]  # leading explained-variance ratios, descending
    participation_ratio: float
    coords: Float[np.ndarray, "n 2"]
    entropy_mean: Float[np.ndarray, " n"]
    loading_share: Float[np.ndarray, "M 2"]
    rho_own: tuple[Estimate, ...]
    rho_entropy: tuple[Estimate, ...]

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("models", "prompts"):
            set_(self, name, tuple(str(x) for x in getattr(self, name)))
        for name in ("layers", "d", "d_kept"):
            set_(self, name, tuple(int(x) for x in getattr(self, name)))
        M, n = len(self.models), len(self.prompts)
        if M < 2 or len(set(self.models)) != M:
            raise ValueError(f"a global PCA needs at least two distinct models, got {self.models}")
        if n < 3 or len(set(self.prompts)) != n:
            raise ValueError(f"a global PCA needs at least 3 distinct prompts, got {n}")
        for name in ("layers", "d", "d_kept", "rho_own", "rho_entropy"):
            if len(getattr(self, name)) != M:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries for {M} models")
        if any(k < 1 or k > dd for k, dd in zip(self.d_kept, self.d)):
            raise ValueError(f"d_kept {self.d_kept} must lie in 1..d {self.d}")
        ex = tuple(float(x) for x in self.explained)
        if (
            not ex
            or any(not 0 <= x <= 1 + 1e-9 for x in ex)
            or sum(ex) > 1 + 1e-6
            or any(a < b - 1e-12 for a, b in zip(ex, ex[1:]))
        ):
            raise ValueError(f"explained ratios {ex} must be descending fractions summing to at most 1")
        set_(self, "explained", ex)
        pr = float(self.participation_ratio)
        if not pr >= 1 - 1e-9:
            raise ValueError(f"participation ratio {pr} must be >= 1")
        set_(self, "participation_ratio", pr)
        set_(self, "coords", frozen_array(self.coords, (n, 2), "coords"))
        set_(self, "entropy_mean", frozen_array(self.entropy_mean, (n,), "entropy_mean"))
        share = frozen_array(self.loading_share, (M, 2), "loading_share")
        if np.any(share < -1e-9) or np.any(share > 1 + 1e-9):
            raise ValueError("loading shares must lie in [0, 1]")
        sums = share.sum(axis=0)
        if not np.all((np.abs(sums - 1) < 1e-6) | (np.abs(sums) < 1e-12)):  # a missing PC2 sums to 0
            raise ValueError(f"loading shares of a component must sum to 1, got {sums}")
        set_(self, "loading_share", share)
        for name in ("rho_own", "rho_entropy"):
            ests = tuple(getattr(self, name))
            if any(
                not isinstance(e, Estimate) or not (math.isnan(e.value) or -1 - 1e-9 <= e.value <= 1 + 1e-9)
                for e in ests
            ):
                raise ValueError(f"{name} must hold Spearman ρ Estimates in [-1, 1]")
            set_(self, name, ests)

    @property
    def n(self) -> int:
        return len(self.prompts)

    @property
    def prompts_hash(self) -> str:
        return shared_prompts_hash(self.prompts)

    def to_dict(self) -> dict[str, Any]:
        # the stored shape differs from the fields: the prompts' hash (derived) is written after them
        out: dict[str, Any] = {}
        for k, v in super().to_dict().items():
            out[k] = v
            if k == "prompts":
                out["prompts_hash"] = self.prompts_hash
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GlobalPCA":
        # Estimate (analysis/stats.py) is not a Record yet: the ρ's are read here
        rho = {k: tuple(Estimate.from_dict(e) for e in d[k]) for k in ("rho_own", "rho_entropy")}
        out = cls(**{**cls.field_values(d), **rho})
        if d.get("prompts_hash") not in (None, out.prompts_hash):
            raise ValueError("prompts_hash does not match the stored prompts")
        return out

    def table(self) -> list[dict[str, str]]:
        """Per-model display rows."""
        return [
            {
                "model": m,
                "layer": str(layer),
                "D kept / D": f"{k} / {dd}",
                "share of PC1": f"{100 * s[0]:.1f} %",
                "share of PC2": f"{100 * s[1]:.1f} %",
                "ρ(own PC1, global PC1)": f"{number(ro, '+.2f')}",
                "ρ(global PC1, entropy)": f"{number(re, '+.2f')}",
            }
            for m, layer, k, dd, s, ro, re in zip(
                self.models, self.layers, self.d_kept, self.d, self.loading_share, self.rho_own, self.rho_entropy
            )
        ]


def standardised_block(x: Float[np.ndarray, "n D"]) -> Float[np.ndarray, "n Dk"]:
    """z-score the columns, drop constant ones, divide by √D_kept (total variance 1)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"values must be a finite (n, D) matrix, got shape {x.shape}")
    kept = ~constant_columns(x)
    k = int(kept.sum())
    if k == 0:
        raise ValueError("every value coordinate is constant over the shared prompts")
    return zscore(x[:, kept]) / math.sqrt(k)


def _spearman_estimate(
    x: np.ndarray, y: np.ndarray, n_resamples: int, confidence: float, random_state: RandomState
) -> Estimate:
    from geoprobe.analysis.alignment import spearman

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return Estimate(math.nan, math.nan, math.nan, confidence)
    est = bootstrap_ci((x, y), spearman, confidence=confidence, n_resamples=n_resamples, random_state=random_state)
    lo, hi = (max(-1.0, est.low), min(1.0, est.high)) if math.isfinite(est.low) else (est.low, est.high)
    return Estimate(float(np.clip(est.value, -1, 1)), lo, hi, confidence)


def global_pca(
    values: Sequence[Float[np.ndarray, "n D"]],
    models: Sequence[str],
    prompts: Sequence[str],
    entropies: Sequence[Float[np.ndarray, " n"]],
    layers: Sequence[int],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: RandomState = 0,
) -> GlobalPCA:
    """The global PCA of ``values[m]`` (rows aligned to ``prompts``), see module docstring."""
    from geoprobe.analysis.manifold import ValueManifold

    M, n = len(values), len(prompts)
    if not (len(models) == len(entropies) == len(layers) == M):
        raise ValueError("values, models, entropies and layers need one entry per model")
    if any(np.shape(v)[0] != n for v in values) or any(np.shape(e) != (n,) for e in entropies):
        raise ValueError(f"every model needs {n} rows of values and entropies (the shared prompts)")
    blocks = [standardised_block(v) for v in values]
    z = np.concatenate(blocks, axis=1)
    fit = ValueManifold(standardize=False).fit(z)  # Z is centred; only the sign convention and spectrum are used
    comps = np.zeros((2, z.shape[1]))
    k = min(2, fit.components_.shape[0])
    comps[:k] = fit.components_[:k]
    coords = np.zeros((n, 2))
    coords[:, :k] = fit.coords_[:, :k]
    edges = np.cumsum([0] + [b.shape[1] for b in blocks])
    share = np.array([[float(np.sum(comps[c, a:b] ** 2)) for c in range(2)] for a, b in zip(edges, edges[1:])])
    ent = [np.asarray(e, dtype=np.float64) for e in entropies]
    rngs = np.random.default_rng(random_state).spawn(2 * M)
    rho_own, rho_ent = [], []
    for m, (x, e) in enumerate(zip(values, ent)):
        own = ValueManifold(n_components=1).fit(np.asarray(x, dtype=np.float64)).coords_[:, 0]
        rho_own.append(_spearman_estimate(own, coords[:, 0], n_resamples, confidence, rngs[2 * m]))
        rho_ent.append(_spearman_estimate(coords[:, 0], e, n_resamples, confidence, rngs[2 * m + 1]))
    return GlobalPCA(
        models=tuple(models),
        layers=tuple(layers),
        prompts=tuple(prompts),
        d=tuple(int(np.shape(v)[1]) for v in values),
        d_kept=tuple(b.shape[1] for b in blocks),
        explained=tuple(float(r) for r in fit.explained_variance_ratio_[:N_RATIOS]),
        participation_ratio=float(fit.participation_ratio_),
        coords=coords,
        entropy_mean=np.mean(ent, axis=0),
        loading_share=share,
        rho_own=tuple(rho_own),
        rho_entropy=tuple(rho_ent),
    )


def align_prompts(prompt_lists: Sequence[Sequence[str]]) -> tuple[list[str], list[np.ndarray]]:
    """Prompts present (exact text) in every list, in the first list's order, and for each list
    the row index of each shared prompt (first occurrence)."""
    firsts = []
    for prompts in prompt_lists:
        idx: dict[str, int] = {}
        for i, p in enumerate(prompts):
            idx.setdefault(p, i)
        firsts.append(idx)
    shared = [p for p in firsts[0] if all(p in f for f in firsts[1:])]
    return shared, [np.array([f[p] for p in shared], dtype=np.int64) for f in firsts]
