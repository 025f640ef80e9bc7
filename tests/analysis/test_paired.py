"""The paired bootstrap's pieces against plain loops (tolerances stated per test), planted changes, Holm and
max-|t| on families with a known answer, and emergence helpers on planted flags."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.stats

from geoprobe.analysis.manifold import ValueManifold
from geoprobe.analysis.paired import (
    axis_angles,
    bootstrap_p,
    cka_resampled,
    first_reaching,
    first_sustained,
    hierarchical_indices,
    holm,
    identity_indices,
    max_t_interval,
    mean_resampled,
    pca_resampled,
    percentile_interval,
    pool_runs,
    progress_fraction,
    reduction_resampled,
    resample_counts,
    resample_indices,
    spearman_resampled,
    subspace_angles_batched,
)
from geoprobe.analysis.stats import constant_columns, zscore
from geoprobe.analysis.tracking import linear_cka, linear_cka_resampled, principal_angles, top_subspace


def _plain_pca(x: np.ndarray, k: int) -> tuple[float, np.ndarray]:
    """PC1 share and top-k loadings of x, written out: drop constant columns, z-score, full SVD."""
    kept = ~constant_columns(x)
    z = zscore(x[:, kept])
    _, s, vt = np.linalg.svd(z, full_matrices=False)
    loads = np.zeros((k, x.shape[1]))
    loads[:, kept] = vt[:k]
    return float(s[0] ** 2 / (s**2).sum()), loads


@pytest.mark.parametrize("shape", [(30, 8), (12, 40)])  # D ≤ n (covariance) and D > n (Gram) paths
def test_pca_resampled_equals_a_plain_loop(shape):
    rng = np.random.default_rng(1)
    n, d = shape
    x = rng.standard_normal((n, d)) @ rng.standard_normal((d, d))
    x[:, 3] = 2.5  # a constant column: dropped, zero loading
    idx = resample_indices(n, 40, 7)
    share, loads = pca_resampled(x, idx, k=2)
    for b in range(len(idx)):
        s, v = _plain_pca(x[idx[b]], 2)
        assert share[b] == pytest.approx(s, abs=1e-12)
        for j in range(2):  # loadings up to sign
            assert min(np.abs(loads[b, j] - v[j]).max(), np.abs(loads[b, j] + v[j]).max()) < 1e-8
    est, top = pca_resampled(x, identity_indices(n), k=2)
    assert est[0] == pytest.approx(_plain_pca(x, 1)[0], abs=1e-12)
    assert np.abs(principal_angles(top[0], top_subspace(x, 2))).max() < 1e-6


def _loop_reference(x: np.ndarray, idx: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``pca_resampled`` as it was before it was vectorised (a Python loop over the resamples, each: the
    weighted standardisation of its distinct rows, the smaller Gram matrix, LAPACK dsyevr for the top pairs),
    kept as the reference the chunked version must reproduce to float rounding."""
    live_tol = 1e-12  # paired's rule for a column constant in a resample
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    b_all, m = idx.shape
    k = max(1, min(int(k), d))
    share = np.full(b_all, np.nan)
    loads = np.full((b_all, k, d), np.nan)
    counts = resample_counts(idx, n)
    lapack = scipy.linalg.get_lapack_funcs("syevr", (x,))
    for b in range(b_all):
        rows = np.flatnonzero(counts[b])
        c = counts[b, rows, None]
        xr = x[rows]
        mean = (c * xr).sum(axis=0) / m
        xc = xr - mean
        sd = np.sqrt((c * xc * xc).sum(axis=0) / m)
        live = sd > live_tol * np.maximum(1.0, np.abs(mean))
        if not live.any():
            continue
        z = np.sqrt(c) * xc * np.divide(1.0, sd, out=np.zeros_like(sd), where=live)
        small = len(rows) <= d
        g = z @ z.T if small else z.T @ z
        size, tot = g.shape[0], float(np.trace(g))
        kk = min(k, size)
        w, vec, _, _, info = lapack(g, range="I", il=size - kk + 1, iu=size, compute_v=1, lower=1, overwrite_a=1)
        if info != 0:
            continue
        lam, vec = np.clip(w[:kk][::-1], 0.0, None), vec[:, :kk][:, ::-1]
        if small:
            vec = z.T @ vec
            vec /= np.maximum(np.linalg.norm(vec, axis=0, keepdims=True), np.finfo(float).tiny)
        if tot > 0:
            share[b] = lam[0] / tot
            loads[b, :kk] = vec.T
    return share, loads


def _assert_same_pca(got: tuple[np.ndarray, np.ndarray], want: tuple[np.ndarray, np.ndarray]) -> None:
    """Shares equal at 1e-10, NaN where the reference's are; loadings equal at 1e-8 up to each axis's sign."""
    (s, v), (s0, v0) = got, want
    assert s.shape == s0.shape and v.shape == v0.shape
    np.testing.assert_array_equal(np.isnan(s), np.isnan(s0))
    np.testing.assert_allclose(s, s0, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(np.isnan(v), np.isnan(v0))
    sign = np.where(np.einsum("bkd,bkd->bk", np.nan_to_num(v), np.nan_to_num(v0)) < 0, -1.0, 1.0)
    np.testing.assert_allclose(v * sign[..., None], v0, rtol=0, atol=1e-8)


def _factor_data(n: int, d: int, seed: int) -> np.ndarray:
    """Three factors plus noise (distinct top eigenvalues, so that the top axes are well defined)."""
    rng = np.random.default_rng(seed)
    scale = np.array([4.0, 2.5, 1.5])[:, None]
    return rng.standard_normal((n, 3)) @ (scale * rng.standard_normal((3, d))) + 0.5 * rng.standard_normal((n, d))


# n < D (rows' Gram; (40, 2000) spans several chunks), n > D (columns' Gram), and (30, 19): resamples with
# fewer distinct rows than D and with more in the same call
@pytest.mark.parametrize("shape", [(12, 40), (40, 2000), (30, 8), (300, 60), (30, 19)])
@pytest.mark.parametrize("k", [1, 3])
def test_pca_resampled_equals_the_loop_it_replaced(shape, k):
    n, d = shape
    x = _factor_data(n, d, seed=n + d)
    x[:, 1] += 1e3  # a large offset: the variance must come from centred values
    idx = resample_indices(n, 40, 11)
    _assert_same_pca(pca_resampled(x, idx, k), _loop_reference(x, idx, k))
    _assert_same_pca(pca_resampled(x, identity_indices(n), k), _loop_reference(x, identity_indices(n), k))


@pytest.mark.parametrize("k", [1, 3])
def test_pca_resampled_constant_columns_and_resamples_without_variance(k):
    n, d = 20, 30
    x = _factor_data(n, d, seed=5)
    x[:, 2] = 7.0  # constant everywhere: zero loading
    x[:, 4] = 1e3  # constant except in row 5: constant in the resamples that do not draw row 5
    x[5, 4] = 1e3 + 1.0
    x[:, 6] = 0.0  # the same at 0
    x[5, 6] = 2.0
    idx = resample_indices(n, 60, 12)
    idx[3] = 5  # one row drawn n times: no variance at all
    idx[4] = np.r_[np.full(n - 3, 8), 9, 10, 11]  # four distinct rows: three axes, and no more
    without = ~(idx == 5).any(axis=1)
    with_ = ~without & (np.arange(60) != 3)
    assert without.sum() > 5 and with_.sum() > 5  # both kinds of resample occur
    share, loads = pca_resampled(x, idx, k)
    _assert_same_pca((share, loads), _loop_reference(x, idx, k))
    assert np.isnan(share[3]) and np.isnan(loads[3]).all()
    assert np.isfinite(share[np.arange(60) != 3]).all()
    assert np.abs(loads[:, :, 2][~np.isnan(loads[:, :, 2])]).max() == 0.0
    for col in (4, 6):
        assert np.abs(loads[without][:, :, col]).max() < 1e-12  # dropped where constant
        assert np.abs(loads[with_][:, 0, col]).max() > 0  # live where row 5 is drawn
    assert np.isnan(pca_resampled(np.ones((6, 4)), resample_indices(6, 5, 0), k)[0]).all()


@pytest.mark.parametrize("shape", [(25, 60), (60, 12)])  # the Gram and the covariance paths of ValueManifold
def test_pca_resampled_identity_is_value_manifold(shape):
    n, d = shape
    x = _factor_data(n, d, seed=3)
    x[:, 5] = -2.0  # dropped by both
    vm = ValueManifold(n_components=3).fit(x)
    share, loads = pca_resampled(x, identity_indices(n), k=3)
    assert share[0] == pytest.approx(vm.explained_variance_ratio_[0], abs=1e-10)
    comps = np.zeros((3, d))
    comps[:, vm.kept_features_] = vm.components_
    sign = np.sign(np.einsum("kd,kd->k", loads[0], comps))
    np.testing.assert_allclose(loads[0] * sign[:, None], comps, rtol=0, atol=1e-8)


def test_counts_and_means_equal_indexing():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 25))
    idx = resample_indices(25, 30, 3)
    c = resample_counts(idx, 25)
    assert c.sum(axis=1).tolist() == [25.0] * 30
    np.testing.assert_allclose(mean_resampled(x, idx), x[:, idx].mean(axis=-1), rtol=0, atol=1e-13)
    first, last = rng.uniform(2, 3, 25), rng.uniform(1, 2, 25)
    plain = [100 * (1 - last[i].mean() / first[i].mean()) for i in idx]
    np.testing.assert_allclose(reduction_resampled(first, last, idx), plain, rtol=0, atol=1e-11)


def test_spearman_resampled_equals_scipy_per_resample():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, 20)), rng.integers(0, 5, 20).astype(float)  # ties in y
    idx = resample_indices(20, 25, 4)
    got = spearman_resampled(x, y, idx)
    for layer in range(2):
        for b in range(25):
            want = scipy.stats.spearmanr(x[layer, idx[b]], y[idx[b]]).statistic
            assert got[layer, b] == pytest.approx(want, abs=1e-12)


def test_cka_from_counts_equals_the_gathered_gram_matrices_and_a_plain_loop():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((40, 12)) + 5.0  # far from centred: the expansion must not lose digits
    y = x @ rng.standard_normal((12, 7)) + rng.standard_normal((40, 7))
    idx = resample_indices(40, 60, 10)
    got = cka_resampled(x, y, idx)
    np.testing.assert_allclose(got, linear_cka_resampled(x, y, idx), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got, [linear_cka(x[i], y[i]) for i in idx], rtol=0, atol=1e-12)
    assert np.isnan(cka_resampled(np.ones((5, 2)), y[:5], resample_indices(5, 3, 0))).all()  # no variance


def test_angles_against_scipy():
    rng = np.random.default_rng(4)
    a = np.stack([scipy.linalg.orth(rng.standard_normal((9, 3))).T for _ in range(5)])
    b = np.stack([scipy.linalg.orth(rng.standard_normal((9, 3))).T for _ in range(5)])
    got = subspace_angles_batched(a, b)
    for i in range(5):
        want = np.sort(np.degrees(scipy.linalg.subspace_angles(a[i].T, b[i].T)))
        np.testing.assert_allclose(np.sort(got[i]), want, atol=1e-6)
    u = np.array([1.0, 0.0, 0.0])
    v = np.array([np.cos(np.radians(30)), -np.sin(np.radians(30)), 0.0])  # 30° away, sign flipped does not matter
    assert axis_angles(u, -v) == pytest.approx(30.0, abs=1e-9)


def test_planted_shift_detected_and_none_where_nothing_changes():
    """Three 'checkpoints' on 80 shared prompts: the second moves by +0.5 SD, the third not at all."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal(80)
    cells = [base + 0.05 * rng.standard_normal(80), base + 0.5 + 0.05 * rng.standard_normal(80)]
    cells.append(base + 0.05 * rng.standard_normal(80))
    idx = resample_indices(80, 1000, 6)
    draws = mean_resampled(np.stack(cells), idx)
    est = np.array([c.mean() for c in cells])
    delta, ddraws = est[1:] - est[0], draws[1:] - draws[0]
    p = holm(bootstrap_p(delta, ddraws))
    assert p[0] < 1e-6 and p[1] > 0.05
    lo, hi, crit = max_t_interval(delta, ddraws)
    assert lo[0] > 0 and lo[1] < 0 < hi[1] and crit > scipy.stats.norm.ppf(0.975)
    plo, phi = percentile_interval(ddraws)
    assert plo[0] > 0.4 and phi[0] < 0.6


def test_max_t_covers_a_family_at_its_level():
    """Independent normal means of 200 draws: 20 members, nominal 95 %; the simultaneous intervals must cover
    all 20 at once in about 95 % of 300 replications (tolerance 0.90 to 1: four binomial SDs), the nominal
    ones far less often. (With 50 draws a member they covered 87 %, with 75 91 %: the bootstrap SE of a mean
    is small by √((n−1)/n) and the normal tails are thinner than t's; docs/sweep.md says so.)"""
    rng = np.random.default_rng(7)
    all_simul = all_nominal = 0
    for rep in range(300):
        x = rng.standard_normal((20, 200))
        idx = resample_indices(200, 400, rep)
        est, dr = x.mean(axis=1), mean_resampled(x, idx)
        lo, hi, _ = max_t_interval(est, dr)
        plo, phi = percentile_interval(dr)
        all_simul += bool(np.all((lo <= 0) & (0 <= hi)))
        all_nominal += bool(np.all((plo <= 0) & (0 <= phi)))
    assert 0.90 <= all_simul / 300 <= 1.0
    assert all_nominal / 300 < 0.6  # 0.95^20 ≈ 0.36


def test_holm_by_hand_and_identical_cells():
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.005])
    np.testing.assert_allclose(holm(p)[[4, 0, 2, 1]], [0.02, 0.03, 0.06, 0.06])
    assert np.isnan(holm(p)[3])
    assert bootstrap_p(np.array(0.0), np.zeros(10)) == 1.0
    assert np.isnan(bootstrap_p(np.array(0.3), np.full(10, 0.3)))


def test_emergence_helpers_on_planted_flags():
    flags = np.array([[0, 1, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0]], bool)
    assert first_sustained(flags).tolist() == [3, -1, 0, -1]
    m = np.array([[1.0, 1.0, 1.5, 2.0, 2.0, 3.0], [2.0, 1.0, 0.0, 0.0, 0.0, 0.0]])
    frac = progress_fraction(m)
    np.testing.assert_allclose(frac[0], [0, 0, 0.25, 0.5, 0.5, 1])
    assert first_reaching(frac, 0.5).tolist() == [3, 1] and first_reaching(frac, 0.9).tolist() == [5, 2]
    assert np.isnan(progress_fraction(np.ones(4))).all()


def test_pool_runs_equals_a_loop():
    rng = np.random.default_rng(8)
    draws = rng.standard_normal((3, 4, 50))  # 3 runs, 4 steps, 50 resamples
    run_idx, pidx = hierarchical_indices(3, 10, 50, 9)
    assert pidx.shape == (50, 10) and run_idx.shape == (50, 3)
    want = np.stack([draws[run_idx[b], :, b].mean(axis=0) for b in range(50)], axis=-1)
    np.testing.assert_allclose(pool_runs(draws, run_idx), want, atol=1e-13)
