"""geoprobe.analysis.tracking: subspaces, CKA, routing stability and PC1 identifiability, on planted
structure and against plain numpy/scipy computations (seeded, fast)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.linalg
from scipy.spatial.distance import jensenshannon

from geoprobe.analysis.stats import spectrum
from geoprobe.analysis.tracking import (
    AxisIdentifiability,
    Eigengap,
    SplitHalf,
    axis_angle,
    axis_identifiability,
    eigengap,
    linear_cka,
    linear_cka_resampled,
    principal_angles,
    routing_stability,
    split_half_pc1,
    top_subspace,
)

TOL = 1e-10
FAST = dict(n_splits=60, null_draws=60, null_sets=10)


# -- plain references --------------------------------------------------------------------------
def plain_angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Principal angles from QR of each basis and the SVD of QaᵀQb (cosines = singular values)."""
    qa, qb = np.linalg.qr(a.T)[0], np.linalg.qr(b.T)[0]
    s = np.linalg.svd(qa.T @ qb, compute_uv=False)
    return np.sort(np.arccos(np.clip(s, -1.0, 1.0)))


def plain_cka(x: np.ndarray, y: np.ndarray) -> float:
    """HSIC with an explicit centring matrix H = I − 11ᵀ/n: tr(KHLH) / √(tr(KHKH) tr(LHLH))."""
    n = len(x)
    h = np.eye(n) - np.ones((n, n)) / n
    k, g = x @ x.T, y @ y.T

    def hsic(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.trace(a @ h @ b @ h))

    return hsic(k, g) / math.sqrt(hsic(k, k) * hsic(g, g))


def plain_pc1(x: np.ndarray) -> np.ndarray:
    """PC1 loading (unit, in all D coordinates) of x z-scored per column, constant columns 0."""
    sd = x.std(axis=0)
    z = np.where(sd > 0, (x - x.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)
    return np.linalg.svd(z, full_matrices=False)[2][0]


def hadamard_rows(d: int) -> np.ndarray:
    return scipy.linalg.hadamard(d).astype(float)


def uncorrelated_scores(n: int, k: int, scales: list[float], seed: int) -> np.ndarray:
    """n × k scores with zero mean, zero sample covariance and sample sd ``scales`` (exactly)."""
    s = np.random.default_rng(seed).standard_normal((n, k))
    q = np.linalg.qr(s - s.mean(axis=0))[0] * math.sqrt(n)  # orthonormal, centred columns
    return q * np.asarray(scales)


# -- subspaces ---------------------------------------------------------------------------------
def test_principal_angles_match_qr_and_svd():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 20)), rng.standard_normal((4, 20))
    got = principal_angles(a, b)
    assert got.shape == (3,) and np.all(np.diff(got) >= 0)
    np.testing.assert_allclose(got, plain_angles(a, b), atol=TOL)
    np.testing.assert_allclose(principal_angles(a, a), 0.0, atol=1e-7)
    with pytest.raises(ValueError, match="dimensions"):
        principal_angles(a, rng.standard_normal((2, 19)))


@pytest.mark.parametrize("theta", [0.2, 0.7, 1.3])
def test_planted_rotation_of_a_basis_is_recovered(theta):
    """span{e1, e2, e3} against span{e1, e2, cos θ e3 + sin θ e4} in R^10: angles (0, 0, θ)."""
    e = np.eye(10)
    b = np.stack([e[0], e[1], math.cos(theta) * e[2] + math.sin(theta) * e[3]])
    np.testing.assert_allclose(principal_angles(e[:3], b), [0.0, 0.0, theta], atol=TOL)
    assert axis_angle(e[2], b[2]) == pytest.approx(math.degrees(theta), abs=1e-9)


def test_planted_rotation_of_the_value_subspace_is_recovered_from_data():
    """Values on two ±1 axes (rows of a Hadamard matrix; every column has the same variance, so the
    z-scoring is one scale and PCA sees the planted axes exactly). The second checkpoint's second
    axis g flips r of h2's signs, keeping g ⊥ h1: the top-2 subspaces meet at (0, arccos(1 − 2r/D))."""
    d, n, r = 64, 30, 12
    h = hadamard_rows(d)
    h1, h2 = h[1], h[2]
    same = np.flatnonzero(h1 * h2 > 0)[: r // 2]
    other = np.flatnonzero(h1 * h2 < 0)[: r // 2]
    g = h2.copy()
    g[np.r_[same, other]] *= -1
    assert g @ h1 == 0
    s = uncorrelated_scores(n, 2, [3.0, 1.0], seed=1)
    before, after = s @ np.stack([h1, h2]), s @ np.stack([h1, g])
    theta = math.acos(1 - 2 * r / d)
    got = principal_angles(top_subspace(before, 2), top_subspace(after, 2))
    np.testing.assert_allclose(got, [0.0, theta], atol=1e-7)
    assert axis_angle(top_subspace(before, 2)[1], top_subspace(after, 2)[1]) == pytest.approx(math.degrees(theta))


def test_top_subspace_is_the_standardised_pca_in_full_coordinates():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((25, 12)) * rng.uniform(0.1, 10, 12) + rng.standard_normal((25, 1)) * rng.uniform(0, 3, 12)
    x[:, 4] = 7.0  # constant: zero loading
    basis = top_subspace(x, 3)
    assert basis.shape == (3, 12)
    np.testing.assert_allclose(basis @ basis.T, np.eye(3), atol=TOL)
    assert np.all(basis[:, 4] == 0)
    sd = x.std(axis=0)
    keep = sd > 0
    z = (x[:, keep] - x[:, keep].mean(axis=0)) / sd[keep]
    ref = np.zeros((3, 12))
    ref[:, keep] = np.linalg.svd(z, full_matrices=False)[2][:3]
    np.testing.assert_allclose(principal_angles(basis, ref), 0.0, atol=1e-7)
    np.testing.assert_allclose(np.abs(np.sum(basis * ref, axis=1)), 1.0, atol=TOL)  # the same axes, not only span
    assert top_subspace(x[:4], 10).shape == (3, 12)  # only n - 1 directions exist


def test_axis_angle_is_sign_free_and_bounded():
    u, v = np.array([1.0, 0.0]), np.array([1.0, 1.0])
    assert axis_angle(u, v) == pytest.approx(45.0)
    assert axis_angle(u, -v) == pytest.approx(45.0)
    assert axis_angle(u, np.array([0.0, 2.0])) == pytest.approx(90.0)
    assert axis_angle(u, -3 * u) == 0.0
    assert math.isnan(axis_angle(u, np.zeros(2)))


# -- linear CKA --------------------------------------------------------------------------------
@pytest.mark.parametrize("n,d1,d2", [(15, 40, 60), (80, 5, 7), (30, 30, 3)])
def test_cka_matches_hsic_with_a_centring_matrix(n, d1, d2):
    rng = np.random.default_rng(n + d1)
    x = rng.standard_normal((n, d1)) + 4.0
    y = x[:, :1] * rng.standard_normal(d2) + rng.standard_normal((n, d2))
    assert linear_cka(x, y) == pytest.approx(plain_cka(x - x.mean(0), y - y.mean(0)), abs=TOL)
    assert linear_cka(x, y) == pytest.approx(plain_cka(x, y), abs=TOL)  # H centres the Gram matrices itself


def test_cka_invariances():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((20, 30)), rng.standard_normal((20, 10))
    q = np.linalg.qr(rng.standard_normal((30, 30)))[0]
    assert linear_cka(x, x) == pytest.approx(1.0, abs=TOL)
    assert linear_cka(x, 5.0 * x @ q + 2.0) == pytest.approx(1.0, abs=TOL)
    base = linear_cka(x, y)
    assert 0.0 < base < 1.0
    assert linear_cka(x @ q, y) == pytest.approx(base, abs=TOL)
    assert linear_cka(0.01 * x, 300.0 * y) == pytest.approx(base, abs=TOL)
    assert linear_cka(y, x) == pytest.approx(base, abs=TOL)
    assert math.isnan(linear_cka(np.ones((20, 3)), y))
    with pytest.raises(ValueError, match="same prompts"):
        linear_cka(x, y[:10])


def test_resampled_cka_is_the_cka_of_each_paired_resample():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((25, 40)) + 10.0
    y = x[:, :3] @ rng.standard_normal((3, 8)) + rng.standard_normal((25, 8))
    idx = rng.integers(0, 25, (37, 25))
    got = linear_cka_resampled(x, y, idx)
    assert got.shape == (37,)
    np.testing.assert_allclose(got, [plain_cka(x[i], y[i]) for i in idx], atol=TOL)
    same = linear_cka_resampled(x, y, np.tile(np.arange(25), (2, 1)))
    np.testing.assert_allclose(same, linear_cka(x, y), atol=TOL)
    assert np.isnan(linear_cka_resampled(x, y, np.zeros((1, 25), dtype=int)))[0]  # one prompt drawn 25 times
    with pytest.raises(ValueError, match="outside"):
        linear_cka_resampled(x, y, np.full((1, 25), 25))


# -- routing stability -------------------------------------------------------------------------
def random_attention(rng: np.random.Generator, n: int, h: int, t: int, lengths: np.ndarray) -> np.ndarray:
    """Distributions over each prompt's real positions (zeros past its length), some zero weights."""
    a = rng.dirichlet(np.full(t, 0.5), (n, h))
    a[rng.random((n, h, t)) < 0.2] = 0.0
    a[:, :, 0] += 1e-3  # never an all-zero row
    a[np.broadcast_to(np.arange(t) >= lengths[:, None, None], a.shape)] = 0.0
    return a / a.sum(axis=-1, keepdims=True)


def test_routing_stability_is_one_minus_scipy_jensen_shannon_squared():
    rng = np.random.default_rng(5)
    n, h, t = 6, 4, 9
    lengths = rng.integers(2, t + 1, n)
    p, q = random_attention(rng, n, h, t, lengths), random_attention(rng, n, h, t, lengths)
    got = routing_stability(p, q)
    ref = np.array([[1 - jensenshannon(p[i, j], q[i, j], base=2) ** 2 for j in range(h)] for i in range(n)])
    assert got.shape == (n, h)
    np.testing.assert_allclose(got, ref, atol=1e-12)
    np.testing.assert_allclose(routing_stability(p, p), 1.0, atol=1e-12)
    one, two = np.zeros((1, 1, 4)), np.zeros((1, 1, 4))
    one[..., :2], two[..., 2:] = 0.5, 0.5
    assert routing_stability(one, two)[0, 0] == pytest.approx(0.0, abs=1e-12)  # disjoint supports


def test_routing_stability_counts_a_sink_mass_as_an_outcome():
    rng = np.random.default_rng(6)
    p = random_attention(rng, 3, 2, 5, np.full(3, 5)) * 0.8  # 0.2 on a sink
    q = random_attention(rng, 3, 2, 5, np.full(3, 5))
    got = routing_stability(p, q)
    ps = np.concatenate([p, 1 - p.sum(-1, keepdims=True)], axis=-1)
    qs = np.concatenate([q, np.zeros((3, 2, 1))], axis=-1)
    ref = np.array([[1 - jensenshannon(ps[i, j], qs[i, j], base=2) ** 2 for j in range(2)] for i in range(3)])
    np.testing.assert_allclose(got, ref, atol=1e-12)
    with pytest.raises(ValueError, match="negative"):
        routing_stability(-p, q)


# -- split-half stability and North's eigengap -------------------------------------------------
def test_split_half_median_equals_a_plain_per_halving_computation():
    """Re-derive the same halvings from the documented generator and fit PC1 on each half with SVD."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((21, 50)) * rng.uniform(0.5, 2, 50) + np.outer(
        rng.standard_normal(21), rng.uniform(-1, 1, 50)
    )
    x[:, 3] = 1.0
    n, m = 21, 10
    orders = np.random.default_rng(11).spawn(2)[0].permuted(np.broadcast_to(np.arange(n), (40, n)), axis=1)
    z = (x - x.mean(0)) / np.where(x.std(0) > 0, x.std(0), 1.0)  # the layer's z-scoring (constant column: 0)

    def centred_pc1(rows: np.ndarray) -> np.ndarray:
        return np.linalg.svd(rows - rows.mean(0), full_matrices=False)[2][0]

    pooled = [abs(centred_pc1(z[o[:m]]) @ centred_pc1(z[o[m:]])) for o in orders]
    literal = [abs(plain_pc1(x[o[:m]]) @ plain_pc1(x[o[m:]])) for o in orders]
    kw = dict(n_splits=40, null_draws=10, null_sets=2, random_state=11)
    a = split_half_pc1(x, **kw)
    b = split_half_pc1(x, restandardise=True, **kw)
    assert a.value.value == pytest.approx(float(np.median(pooled)), abs=TOL)
    assert a.value.low == pytest.approx(float(np.quantile(pooled, 0.025)), abs=TOL)
    assert b.value.value == pytest.approx(float(np.median(literal)), abs=TOL)
    assert (a.n, a.d, a.n_splits, a.null_draws, a.null_sets) == (21, 50, 40, 10, 2)


def test_planted_rank_one_is_identifiable():
    rng = np.random.default_rng(8)
    x = 3.0 * np.outer(rng.standard_normal(75), rng.uniform(0.5, 1.5, 300)) + rng.standard_normal((75, 300))
    s = split_half_pc1(x, **FAST)
    assert s.identifiable and s.value.value > 0.95 and s.value.low > 0.9
    assert s.null_high < 0.5 and s.null_mean < s.null_high
    e = eigengap(spectrum(x), 75)
    assert e.separated
    res = axis_identifiability([x], [5], model="toy", **FAST)
    assert res.identifiable == (True,) and res.of(5) and res.note(5) == ""


@pytest.mark.parametrize("d", [20, 400])
def test_isotropic_noise_is_not_identifiable(d):
    x = np.random.default_rng(d).standard_normal((75, d))
    s = split_half_pc1(x, **FAST)
    assert not s.identifiable and s.value.value <= s.null_high
    res = axis_identifiability([x], [0], **FAST)
    assert res.identifiable == (False,)
    assert res.note(0).startswith("PC1 not identifiable (split-half |cos|")


def test_two_nearly_equal_leading_eigenvalues_are_not_identifiable():
    """A plane with two equal variances: PC1 is any direction in it. The halves agree on the plane
    (|cos| well above the noise null) but North's rule sees no gap, so the axis is not identifiable."""
    rng = np.random.default_rng(9)
    n, d = 75, 200
    plane = np.linalg.qr(rng.standard_normal((d, 2)))[0].T * math.sqrt(d)
    x = uncorrelated_scores(n, 2, [2.0, 1.97], seed=3) @ plane + rng.standard_normal((n, d))
    res = axis_identifiability([x], [2], **FAST)
    e = res.eigengap[0]
    assert not e.separated and e.gap < e.north_error
    assert res.identifiable == (False,)
    assert "within North's error" in res.note(2)
    assert res.split_half[0].value.value < 0.95  # the halves' PC1s wander in the plane


def test_eigengap_on_planted_spectra():
    e = eigengap([0.5, 0.2, 0.1], 75)
    assert e.gap == pytest.approx(0.3) and e.north_error == pytest.approx(0.5 * math.sqrt(2 / 75))
    assert e.separated
    assert not eigengap([0.136, 0.130], 75).separated  # issue 37's step 3000
    assert eigengap([0.136, 0.130], 200_000).separated  # the same gap is resolved with enough prompts
    assert eigengap([0.4], 10).gap == pytest.approx(0.4)
    assert math.isnan(eigengap([], 10).gap) and not eigengap([], 10).separated
    with pytest.raises(ValueError, match="descending"):
        eigengap([0.1, 0.5], 10)
    # from data: a diagonal covariance with variances 9, 4, 1, ... (ratios known in the limit)
    rng = np.random.default_rng(10)
    sd = np.array([3.0, 2.0] + [1.0] * 8)
    x = uncorrelated_scores(400, 10, list(sd), seed=5) @ np.linalg.qr(rng.standard_normal((10, 10)))[0].T
    z = spectrum(x)
    assert eigengap(z, 400).pc1 == pytest.approx(z[0]) and eigengap(z, 400).gap == pytest.approx(z[0] - z[1])


def test_records_round_trip_and_check_their_verdicts():
    rng = np.random.default_rng(12)
    vals = [
        rng.standard_normal((12, 8)),
        2 * np.outer(rng.standard_normal(12), np.ones(16)) + rng.standard_normal((12, 16)),
    ]
    res = axis_identifiability(vals, [0, 3], model="m", random_state=1, **FAST)
    back = AxisIdentifiability.from_dict(json.loads(json.dumps(res.to_dict(), allow_nan=False)))
    assert back == res and back.layers == (0, 3) and back.n == 12
    assert axis_identifiability(vals, [0, 3], model="m", random_state=1, **FAST) == res  # seeded
    assert [s.d for s in res.split_half] == [8, 16]
    with pytest.raises(ValueError, match="disagrees"):
        SplitHalf(res.split_half[0].value, 0.0, 0.0, 12, 8, 1, 1, 1, False)
    with pytest.raises(ValueError, match="disagrees"):
        Eigengap(0.5, 0.1, 10, 0.4, 0.2, False)
    with pytest.raises(ValueError, match="disagrees"):
        AxisIdentifiability("m", (0, 3), 12, res.split_half, res.eigengap, (True, True))


def test_the_intervention_axis_warns_when_its_pc1_is_not_identifiable():
    """geoprobe.intervene picks "the entropy axis" as PC1: one warning line when that PC1 is no axis."""
    import warnings

    from geoprobe.intervene import fit_entropy_axis

    rng = np.random.default_rng(13)
    t = rng.standard_normal(60)
    planted = (3.0 * t[:, None] * rng.uniform(0.5, 1.5, 32) + rng.standard_normal((60, 32))).reshape(60, 2, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit_entropy_axis(planted, t, layer=4)  # identifiable: no warning
    with pytest.warns(UserWarning, match=r"^layer 4: PC1 not identifiable \(split-half \|cos\| .* ≤ null"):
        fit_entropy_axis(rng.standard_normal((60, 2, 16)), t, layer=4)
