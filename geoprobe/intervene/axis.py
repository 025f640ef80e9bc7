"""The entropy axis of a layer's value vectors, and matched random-axis controls.

Definition (``fit_entropy_axis``). X is the n × D matrix of final-token values of one layer
(D = Hkv · d_head, KV heads concatenated, as in ``geoprobe.analysis.manifold``). Its columns
are z-scored (mean μ_j, sd s_j over the calibration prompts) and PC1 of the z-scores is
``u_z`` (``ValueManifold``). The PC1 coordinate of a value vector x is therefore

    c(x) = Σ_j u_z,j (x_j − μ_j) / s_j = w · (x − μ),   w_j = u_z,j / s_j,

so the axis in **raw value space** is the linear functional ``w`` (zero on constant columns,
which the PCA drops). The sign is chosen so that Spearman ρ(c, entropy) ≥ 0.

Operations edit each KV head separately, so the axis is stored per KV head:
``direction[h] = w_h / ‖w_h‖`` (a unit vector in head h's d_head-dim value space) and
``head_weight[h] = ‖w_h‖``, which gives back ``c(x) = Σ_h head_weight[h] · direction[h] · (x_h − μ_h)``
exactly (``Axis.coordinate``). ``sigma[h]`` is the sd of ``direction[h] · x_h`` over the
calibration prompts (the unit used by ``shift``). The per-head covariance of the calibration
values is kept so that ``sigma`` of any other direction (the random controls) is computed
from the same prompts.

Random controls (``random_axes``): per KV head, a Gaussian direction orthogonalised against
``direction[h]`` (Gram–Schmidt) and normalised; same ``head_weight``, ``mean`` and calibration
covariance; seeded.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np

from geoprobe.analysis.alignment import orientation, spearman
from geoprobe.analysis.manifold import ValueManifold
from geoprobe.analysis.stats import RandomState
from geoprobe.analysis.tracking import axis_identifiability
from geoprobe.errors import GeoprobeError

MIN_PROMPTS = 8


class InterventionError(GeoprobeError):
    """A bad intervention request: strength, layer, axis shape, or an edit that never applied."""


@dataclass(frozen=True, eq=False)
class Axis:
    """A direction per KV head in raw value space (see the module docstring)."""

    direction: np.ndarray  # (Hkv, d_head), each row unit-norm
    head_weight: np.ndarray  # (Hkv,) ‖w_h‖: c(x) = Σ_h head_weight[h] · direction[h]·(x_h − mean[h])
    mean: np.ndarray  # (Hkv, d_head) calibration mean μ
    cov: np.ndarray  # (Hkv, d_head, d_head) calibration covariance per head (ddof 0)
    sigma: np.ndarray  # (Hkv,) sd over calibration prompts of direction[h]·x_h
    layer: int | None = None
    kind: str = "entropy"  # "entropy" or "random"
    seed: int | None = None  # random controls: index of the control drawn from the seeded generator
    explained_variance_ratio: float = float("nan")  # PC1 ratio of the calibration fit
    rho: float = float("nan")  # Spearman ρ(c, entropy) on the calibration prompts (≥ 0 by orientation)

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.direction.shape)  # type: ignore[return-value]

    def coordinate(self, values: np.ndarray) -> np.ndarray:
        """Axis coordinate of values (n, Hkv, d_head) → (n,). For the entropy axis this is the
        PC1 coordinate of the calibration ``ValueManifold``."""
        v = _check_values(values, self.shape)
        return np.einsum("nhd,hd,h->n", v - self.mean, self.direction, self.head_weight)

    def projections(self, values: np.ndarray) -> np.ndarray:
        """direction[h]·x_h per prompt and head: (n, Hkv)."""
        v = _check_values(values, self.shape)
        return np.einsum("nhd,hd->nh", v, self.direction)

    def sigma_of(self, direction: np.ndarray) -> np.ndarray:
        """sd over the calibration prompts of direction[h]·x_h, from the stored covariance."""
        return np.sqrt(np.maximum(np.einsum("hd,hde,he->h", direction, self.cov, direction), 0.0))


def _check_values(values: np.ndarray, shape: tuple[int, int] | None = None) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 3:
        raise InterventionError(f"values have shape {v.shape}; expected (prompts, kv_heads, d_head)")
    if shape is not None and v.shape[1:] != tuple(shape):
        raise InterventionError(f"values have (kv_heads, d_head) = {v.shape[1:]}, the axis has {tuple(shape)}")
    return v


def fit_entropy_axis(values: np.ndarray, entropy: np.ndarray, layer: int | None = None) -> Axis:
    """PC1 of the z-scored final-token values of one layer, oriented by entropy, per KV head. Warns in one
    line when that PC1 is not identifiable (split-half stability or North's eigengap,
    :func:`geoprobe.analysis.tracking.axis_identifiability`): edits along it then follow no stable axis."""
    v = _check_values(values)
    n, hkv, d = v.shape
    entropy = np.asarray(entropy, dtype=np.float64)
    if entropy.shape != (n,):
        raise InterventionError(f"entropy has shape {entropy.shape}; expected ({n},), one per prompt")
    if n < MIN_PROMPTS:
        raise InterventionError(
            f"{n} prompts are too few to estimate an entropy axis (need at least {MIN_PROMPTS}); pass more prompts"
        )
    if not np.isfinite(v).all() or not np.isfinite(entropy).all():
        raise InterventionError("values or entropies contain NaN/Inf; the axis cannot be estimated")
    x = v.reshape(n, hkv * d)
    vm = ValueManifold(n_components=1).fit(x)
    if note := axis_identifiability([x], [0 if layer is None else layer]).note(0 if layer is None else layer):
        warnings.warn(
            f"layer {layer}: {note}; the entropy axis fitted there is not an identifiable direction", stacklevel=2
        )
    u_z = np.zeros(hkv * d)
    u_z[vm.kept_features_] = vm.components_[0]
    sign = orientation(vm.coords_[:, 0], entropy)
    w = (sign * u_z / vm.scale_).reshape(hkv, d)
    norms = np.linalg.norm(w, axis=1)
    if (norms == 0).any():
        raise InterventionError(
            f"KV head(s) {np.flatnonzero(norms == 0).tolist()} have constant values over the "
            "prompts; the axis is undefined there"
        )
    direction = w / norms[:, None]
    mean = v.mean(axis=0)
    centred = v - mean
    cov = np.einsum("nhd,nhe->hde", centred, centred) / n
    rho = float(spearman(sign * vm.coords_[:, 0], entropy))
    ax = Axis(
        direction=direction,
        head_weight=norms,
        mean=mean,
        cov=cov,
        sigma=np.zeros(hkv),
        layer=layer,
        kind="entropy",
        explained_variance_ratio=float(vm.explained_variance_ratio_[0]),
        rho=rho,
    )
    return replace(ax, sigma=ax.sigma_of(direction))


def random_axes(axis: Axis, n: int, random_state: RandomState = 0) -> list[Axis]:
    """``n`` seeded random controls: per KV head a unit direction orthogonal to ``axis.direction[h]``."""
    if n < 0:
        raise InterventionError(f"number of random controls {n} must be >= 0; pass --controls 0 or more")
    rng = np.random.default_rng(random_state)
    out = []
    for i in range(n):
        g = rng.standard_normal(axis.shape)
        g -= np.einsum("hd,hd->h", g, axis.direction)[:, None] * axis.direction  # Gram–Schmidt
        g /= np.linalg.norm(g, axis=1, keepdims=True)
        out.append(
            replace(
                axis,
                direction=g,
                sigma=axis.sigma_of(g),
                kind="random",
                seed=i,
                explained_variance_ratio=float("nan"),
                rho=float("nan"),
            )
        )
    return out
