"""The entropy axis: PC1 of the z-scored values, oriented by entropy, mapped to raw space per KV head."""

from __future__ import annotations

import numpy as np
import pytest

from geoprobe.analysis.alignment import spearman
from geoprobe.analysis.manifold import ValueManifold
from geoprobe.intervene import InterventionError, fit_entropy_axis


def _synthetic(n=400, hkv=2, d=5, seed=0):
    rng = np.random.default_rng(seed)
    h = rng.uniform(0, 4, n)
    scales = rng.uniform(0.5, 2.0, (hkv, d))  # different column scales: z-scoring matters
    v = rng.standard_normal((n, hkv, d)) * scales
    v[:, 0, 1] += 1.5 * scales[0, 1] * (h - 2)  # an entropy-driven direction in head 0
    v[:, 1, 3] -= 1.5 * scales[1, 3] * (h - 2)  # and (anti-aligned) in head 1
    return v, h


def test_coordinate_is_the_value_manifold_pc1_oriented_by_entropy():
    v, h = _synthetic()
    ax = fit_entropy_axis(v, h, layer=3)
    vm = ValueManifold(n_components=1).fit(v.reshape(len(v), -1))
    c = ax.coordinate(v)
    pc1 = vm.coords_[:, 0]
    sign = np.sign(np.dot(c, pc1))
    np.testing.assert_allclose(c, sign * pc1, rtol=1e-9, atol=1e-9)
    assert spearman(c, h) > 0.9 and ax.rho > 0.9
    np.testing.assert_allclose(ax.explained_variance_ratio, vm.explained_variance_ratio_[0])
    np.testing.assert_allclose(np.linalg.norm(ax.direction, axis=1), 1.0)
    # raw-space mapping: w = u_z / scale; the per-head direction is w_h / |w_h|
    w = (sign * vm.components_[0] / vm.scale_).reshape(ax.shape)
    np.testing.assert_allclose(ax.direction, w / np.linalg.norm(w, axis=1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(ax.head_weight, np.linalg.norm(w, axis=1))
    np.testing.assert_allclose(ax.sigma, np.einsum("nhd,hd->nh", v, ax.direction).std(0), rtol=1e-9)
    # the entropy orientation: the planted columns load with the signs that make c rise with h
    assert ax.direction[0, 1] > 0 and ax.direction[1, 3] < 0


def test_orientation_flips_with_entropy():
    v, h = _synthetic()
    a, b = fit_entropy_axis(v, h), fit_entropy_axis(v, -h)
    np.testing.assert_allclose(a.direction, -b.direction, atol=1e-12)


def test_bad_inputs():
    v, h = _synthetic(n=20)
    with pytest.raises(InterventionError, match="too few"):
        fit_entropy_axis(v[:5], h[:5])
    with pytest.raises(InterventionError, match="one per prompt"):
        fit_entropy_axis(v, h[:-1])
    with pytest.raises(InterventionError, match="expected"):
        fit_entropy_axis(v.reshape(20, -1), h)
    bad = v.copy()
    bad[:, 1] = 1.0  # a KV head with constant values
    with pytest.raises(InterventionError, match="constant"):
        fit_entropy_axis(bad, h)
    ax = fit_entropy_axis(v, h)
    with pytest.raises(InterventionError, match="axis has"):
        ax.coordinate(v[:, :1])
