"""The Bayes-optimal denoisers against independent Monte Carlo, the linear closed form, and the finite-context
estimators converging to the oracle as L grows. Tolerances are stated per test (MC standard errors ≈ 1/√N)."""

from __future__ import annotations

import numpy as np
from scipy.special import ive, softmax

from geoprobe.denoise.bayes import (
    finite_context,
    linear_bayes_mse,
    linear_oracle,
    mixture_oracle,
    oracle,
    per_prompt_mse,
    sphere_mc_posterior_mean,
    sphere_oracle,
    vmf_mean_length,
)
from geoprobe.denoise.tasks import make_task, random_basis, sample


def test_linear_closed_form_matches_monte_carlo():
    assert abs(linear_bayes_mse(16, 8, 2.0, 1.0) - 1 / 3) < 1e-15
    t = make_task("linear", context_length=9)
    p = sample(t, 20000, np.random.default_rng(0))
    mse = per_prompt_mse(oracle(t, p), p.clean)
    se = mse.std() / np.sqrt(len(mse))
    assert abs(mse.mean() - 1 / 3) < 4 * se  # ≈ 0.3 % of the value
    # optimality: any other shrinkage factor is worse
    for f in (0.9, 1.1):
        worse = per_prompt_mse(f * oracle(t, p), p.clean).mean()
        assert worse > mse.mean()


def test_linear_oracle_drops_the_orthogonal_noise():
    U = random_basis(np.random.default_rng(1), 3, 5, 2)
    x = np.random.default_rng(2).standard_normal((3, 5))
    out = linear_oracle(x, U, 2.0, 1.0)
    assert np.allclose(out, 2 / 3 * np.einsum("bij,bj->bi", U @ U.transpose(0, 2, 1), x))


def test_mixture_oracle_matches_importance_sampling_including_the_norm_term():
    """Non-unit centres and unequal weights, so the ‖μ‖² term and ln w matter; MC over 400k prior draws."""
    rng = np.random.default_rng(3)
    n, k, s0, sz = 3, 3, 0.05, 0.2
    M = rng.standard_normal((n, k)) * np.array([0.5, 1.0, 1.6])
    w = np.array([0.2, 0.3, 0.5])
    N = 400_000
    j = rng.choice(k, size=N, p=w)
    x = M.T[j] + rng.normal(0, np.sqrt(s0), (N, n))
    for trial in range(3):
        noisy = M[:, trial] + rng.normal(0, 0.5, n)
        lw = -np.sum((noisy - x) ** 2, axis=1) / (2 * sz)
        pw = np.exp(lw - lw.max())
        mc = (pw[:, None] * x).sum(0) / pw.sum()
        ess = pw.sum() ** 2 / (pw**2).sum()
        got = mixture_oracle(noisy[None], M[None], s0, sz, w[None])[0]
        assert ess > 2000
        assert np.allclose(got, mc, atol=0.01), (got, mc, ess)
    # without the ‖μ‖² term (the unit-norm shortcut) the answer is different for these centres
    s = s0 + sz
    post = softmax(M.T @ noisy / s + np.log(w))
    shortcut = s0 / s * noisy + sz / s * M @ post
    assert not np.allclose(shortcut, got, atol=0.01)


def test_vmf_ratio_and_sphere_oracle_match_importance_sampling():
    rng = np.random.default_rng(4)
    n, d, R, sz = 10, 8, 1.0, 0.1
    U = random_basis(rng, 1, n, d)[0]
    for trial in range(3):
        u = rng.standard_normal(d)
        x = U @ (R * u / np.linalg.norm(u))
        noisy = x + rng.normal(0, np.sqrt(sz), n)
        mc = sphere_mc_posterior_mean(noisy, U, R, sz, 400_000, rng)
        got = sphere_oracle(noisy[None], U[None], R, sz)[0]
        assert np.allclose(got, mc, atol=0.01), (got, mc)
    # the released code's Bessel orders (d−1.5, d−2.5) differ from the vMF orders (d/2, d/2−1) at d = 8
    kappa = R * np.linalg.norm(U.T @ noisy) / sz
    theirs = ive(d - 1.5, kappa) / ive(d - 2.5, kappa)
    ours = float(vmf_mean_length(kappa, d))
    mc_len = np.linalg.norm(U.T @ mc) / R
    assert abs(ours - mc_len) < 0.01 and abs(theirs - mc_len) > 0.03


def test_vmf_mean_length_limits():
    assert vmf_mean_length(np.array(0.0), 8) == 0.0
    assert abs(float(vmf_mean_length(np.array(1e4), 8)) - (1 - 7 / 2e4)) < 1e-6  # 1 − (d−1)/(2κ)
    assert abs(float(vmf_mean_length(np.array(1e-4), 8)) - 1e-4 / 8) < 1e-9  # κ/d for small κ


def test_finite_context_estimators_approach_the_oracle_as_L_grows():
    ratios = {}
    for name in ("linear", "mixture"):
        t = make_task(name, n=8, d=3, k=4)
        r = []
        for i, L in enumerate((10, 100, 2000)):
            p = sample(t, 400, np.random.default_rng([5, i]), L=L)
            r.append(
                per_prompt_mse(finite_context(t, p), p.clean).mean() / per_prompt_mse(oracle(t, p), p.clean).mean()
            )
        ratios[name] = r
    # mixture: the empirical prior converges to the true one
    r = ratios["mixture"]
    assert r[0] > r[1] > r[2] and r[2] < 1.03, r
    # linear: a clean context spans the subspace exactly once L ≥ d, only σ0² is estimated, so it is close at every L
    assert all(abs(v - 1) < 0.02 for v in ratios["linear"]), ratios["linear"]
    # the sphere: the clean context spans the subspace exactly and has norm R, so the estimator IS the oracle
    t = make_task("sphere", n=8, d=3, context_length=20)
    p = sample(t, 50, np.random.default_rng(6))
    assert np.allclose(finite_context(t, p), oracle(t, p), atol=1e-10)
