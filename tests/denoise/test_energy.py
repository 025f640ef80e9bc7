"""The energy view of attention (geoprobe.denoise.energy): exact identities in float64, monotone
descent, and the (α, β) landscape on planted mixtures whose optimum is known analytically."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from scipy.special import softmax as np_softmax

from geoprobe.denoise.energy import attention_step, descend, energy, energy_gradient, gradient_step
from geoprobe.denoise.landscape import DescentComparison, EnergyLandscape, descent_comparison, landscape
from geoprobe.denoise.report import descent_figure, landscape_figure
from geoprobe.errors import GeoprobeError, ResultsError


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """These tensors are tiny: on a busy 2-core machine torch's intra-op threads spin-wait for
    each other and a 20-step descent takes 25× longer than on one thread. Restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def mixture(B: int, K: int, n: int, m: int, sigma_z: float, sigma0: float, seed: int):
    """Per row: K random unit-norm centres μ_a; a context of m·K tokens (each centre m times, plus
    N(0, σ0²/n I) jitter); a clean point = a uniformly drawn centre (+ fresh jitter, so it is not
    a context token when σ0 > 0); noisy = clean + N(0, σ_Z² I)."""
    g = torch.Generator().manual_seed(seed)
    mu = torch.randn(B, K, n, generator=g, dtype=torch.float64)
    mu = mu / mu.norm(dim=-1, keepdim=True)
    X = mu.repeat(1, m, 1) + sigma0 / math.sqrt(n) * torch.randn(B, m * K, n, generator=g, dtype=torch.float64)
    a = torch.randint(0, K, (B,), generator=g)
    clean = mu[torch.arange(B), a] + sigma0 / math.sqrt(n) * torch.randn(B, n, generator=g, dtype=torch.float64)
    noisy = clean + sigma_z * torch.randn(B, n, generator=g, dtype=torch.float64)
    return X, noisy, clean, mu


def random_context(B=6, L=9, n=5, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    X = scale * torch.randn(B, L, n, generator=g, dtype=torch.float64)
    s = scale * torch.randn(B, n, generator=g, dtype=torch.float64)
    return X, s


# -- identities ---------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.3, 7.0), (2.5, 0.05)])
def test_gradient_matches_autograd(alpha, beta):
    X, s = random_context(seed=1)
    s = s.clone().requires_grad_(True)
    energy(s, X, alpha, beta).sum().backward()
    analytic = energy_gradient(s.detach(), X, alpha, beta)
    assert torch.allclose(analytic, s.grad, rtol=0, atol=1e-12)
    # and the step is s − γ∇E
    step = gradient_step(s.detach(), X, alpha, beta, gamma=0.2)
    assert torch.allclose(step, s.detach() - 0.2 * s.grad, rtol=0, atol=1e-12)


def test_energy_matches_independent_numpy():
    X, s = random_context(seed=2)
    a, b = 0.7, 3.0
    Xn, sn = X.numpy(), s.numpy()
    ref = [sn[i] @ sn[i] / (2 * a) - np.log(np.sum(np.exp(b * Xn[i] @ sn[i]))) / b for i in range(len(sn))]
    assert np.allclose(energy(s, X, a, b).numpy(), ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("alpha,beta", [(1.0, 4.0), (0.5, 0.3), (3.0, 25.0)])
def test_one_step_from_the_query_is_attention(alpha, beta):
    X, q = random_context(seed=3)
    att = attention_step(q, X, alpha, beta)
    assert (gradient_step(q, X, alpha, beta, gamma=alpha) - att).abs().max() < 1e-12
    assert (gradient_step(q, X, alpha, beta) - att).abs().max() < 1e-12  # γ defaults to α
    assert (descend(q, X, alpha, beta, n_steps=1)[1] - att).abs().max() < 1e-12
    # independent: softmax attention with W_KQ = βI, W_PV = αI, the query not in the context
    Xn, qn = X.numpy(), q.numpy()
    W_KQ, W_PV = beta * np.eye(Xn.shape[-1]), alpha * np.eye(Xn.shape[-1])
    ref = np.stack([np_softmax(Xn[i] @ W_KQ @ qn[i]) @ (Xn[i] @ W_PV.T) for i in range(len(qn))])
    assert np.abs(att.numpy() - ref).max() < 1e-12


def test_numpy_and_float32_inputs():
    X, q = random_context(seed=4)
    out32 = attention_step(q.float(), X.float(), 1.0, 2.0)
    assert out32.dtype == torch.float32
    assert torch.allclose(out32.double(), attention_step(q.numpy(), X.numpy(), 1.0, 2.0), atol=1e-5)


# -- descent ------------------------------------------------------------------------------------
@pytest.mark.parametrize("ratio", [1.0, 0.5, 0.1])
@pytest.mark.parametrize("beta", [0.2, 2.0, 20.0])
def test_energy_non_increasing_along_descent(ratio, beta):
    """CCCP: E(s_{t+1}) ≤ E(s_t) row by row for γ = ratio·α ≤ α, up to float64 rounding."""
    X, q = random_context(B=16, L=12, n=6, seed=5, scale=1.5)
    alpha = 0.8
    traj = descend(q, X, alpha, beta, gamma=ratio * alpha, n_steps=40)
    assert traj.shape == (41, 16, 6) and torch.equal(traj[0], q)
    E = torch.stack([energy(s, X, alpha, beta) for s in traj])
    rise = E[1:] - E[:-1]
    assert float(rise.max()) <= 1e-12 * float(E.abs().max() + 1)
    assert float(E[-1].mean()) < float(E[0].mean())  # it actually moved downhill


def test_too_large_a_step_can_raise_the_energy():
    """The guarantee ends at γ = 2α: the isotropic upper bound grows beyond it; a test that fails
    if the monotonicity check above is vacuous."""
    X, q = random_context(B=16, L=12, n=6, seed=5, scale=1.5)
    traj = descend(q, X, 0.8, 2.0, gamma=3 * 0.8, n_steps=5)
    E = torch.stack([energy(s, X, 0.8, 2.0) for s in traj])
    assert float((E[1:] - E[:-1]).max()) > 1e-3


def test_one_step_denoises_many_steps_retrieve():
    """Tight clusters, clean point not in the context (σ0 = 0.1 > 0), σ_Z = 0.4, (α, β) = (1, 1/σ_Z²).
    Over seeds 0–5 (400 rows) the one-step MSE was 0.997–1.014 × the Bayes posterior mean's (true
    centres; optimal only in expectation, so a finite sample can dip below it), the 20-step MSE
    1.17–1.41 × the one-step MSE, and the final states 0.043–0.047 from a centre (noisy query: ≈1.6)."""
    sz, s0, n = 0.4, 0.1, 16
    X, q, c, mu = mixture(400, 4, n, 8, sz, s0, seed=0)
    # Bayes posterior mean with the true centres: within-cluster variance s0²/n per coordinate
    v0 = s0**2 / n
    w = torch.softmax(torch.einsum("bkn,bn->bk", mu, q) / (v0 + sz**2), dim=-1)
    post = torch.einsum("bk,bkn->bn", w, mu + v0 / (v0 + sz**2) * (q[:, None] - mu))
    bayes = float(((post - c) ** 2).mean())
    d = descent_comparison(X, q, c, 1.0, 1 / sz**2, n_steps=20)
    assert d.mse[0] == pytest.approx(sz**2, rel=0.05)  # the noisy query itself
    assert 0.95 * bayes <= d.mse[1] <= 1.10 * bayes  # one attention step ≈ the posterior mean
    assert d.mse[1] < 0.1 * d.mse[0]
    assert d.best_step == 1
    assert d.mse[20] > 1.1 * d.mse[1]  # retrieval is worse for denoising
    assert d.max_energy_increase <= 1e-12
    assert all(e1 <= e0 + 1e-12 for e0, e1 in zip(d.energy, d.energy[1:]))
    # retrieval: the state ends next to the stored memories (a context token / the cluster centre)
    assert d.token_distance[20] < 0.1 * d.token_distance[0]
    final = descend(q, X, 1.0, 1 / sz**2, n_steps=20)[-1]
    to_centre = (final[:, None] - mu).norm(dim=-1).min(-1).values
    assert float(to_centre.mean()) < 0.1 and float((q[:, None] - mu).norm(dim=-1).min(-1).values.mean()) > 1.0


# -- landscape -----------------------------------------------------------------------------------
ALPHAS = tuple(np.geomspace(0.25, 4, 21))
BETAS = tuple(np.geomspace(0.25, 64, 33))


@pytest.fixture(scope="module")
def planted_landscape():
    """σ0 = 0: the context holds the K unit-norm centres themselves and the clean point is one of
    them, so the Bayes posterior mean is Σ_a μ_a softmax_a(μ_aᵀx̃/σ_Z²) — exactly the one-step
    denoiser at (α, β) = (1, 1/σ_Z²), hence the population MSE minimiser over (α, β)."""
    sz = 0.5
    X, q, c, _ = mixture(2000, 4, 8, 1, sz, 0.0, seed=0)
    return sz, (X, q, c), landscape(X, q, c, ALPHAS, BETAS, provenance={"seed": 0, "sigma_z": sz})


def test_landscape_minimum_is_bayes_optimal(planted_landscape):
    """Tolerances from 5 seeds × 2000 rows: |log α*| ≤ 0.005 and |log(β*σ_Z²)| ≤ 0.06 were measured;
    asserted |log α*| < 0.03 and |log(β*σ_Z²)| < 0.2 (β is less sharply determined than α)."""
    sz, _, r = planted_landscape
    a, b, m = r.grid_min
    assert a == pytest.approx(1.0) and b == pytest.approx(1 / sz**2)  # both are grid points
    assert r.converged, r.message
    assert abs(math.log(r.alpha_star)) < 0.03
    assert abs(math.log(r.beta_star * sz**2)) < 0.2
    assert r.mse_star <= m + 1e-15  # the refinement never ends above the grid
    assert r.mse_star < 0.2 * r.mse_noisy
    assert (r.n_samples, r.context_length, r.dim) == (2000, 4, 8)
    assert (
        r.provenance["seed"] == 0 and len(r.provenance["inputs_sha256"]) == 64 and "torch" in r.provenance["versions"]
    )


def test_landscape_grid_matches_direct_computation_and_chunking(planted_landscape):
    _, (X, q, c), r = planted_landscape
    grid = np.asarray(r.mse)
    for i, j in [(0, 0), (10, 12), (20, 32), (7, 25)]:
        direct = float(((attention_step(q, X, ALPHAS[i], BETAS[j]) - c) ** 2).mean())
        assert grid[i, j] == pytest.approx(direct, rel=1e-10)
    small = landscape(X[:60], q[:60], c[:60], ALPHAS[::4], BETAS[::4], chunk_elements=40, options={"maxiter": 1})
    whole = landscape(X[:60], q[:60], c[:60], ALPHAS[::4], BETAS[::4], options={"maxiter": 1})
    assert np.allclose(small.mse, whole.mse, rtol=1e-12, atol=0)


def test_non_convergence_is_reported_not_hidden():
    X, q, c, _ = mixture(200, 4, 8, 1, 0.5, 0.0, seed=1)
    r = landscape(X, q, c, (0.5, 2.0), (1.0, 16.0), options={"maxiter": 1})
    assert r.converged is False and "iteration" in r.message.lower()
    assert r.alpha_star is not None and r.n_iterations == 1  # the minimiser's own point, as found
    r2 = EnergyLandscape.from_dict(json.loads(json.dumps(r.to_dict(), allow_nan=False)))
    assert r2 == r and r2.converged is False
    nm = landscape(X, q, c, (0.5, 2.0), (1.0, 16.0), method="Nelder-Mead")
    assert nm.converged and nm.mse_star <= nm.grid_min[2]


def test_landscape_json_round_trip(planted_landscape, tmp_path):
    _, _, r = planted_landscape
    path = r.save(tmp_path / "energy_landscape.json")
    assert "NaN" not in path.read_text()
    assert EnergyLandscape.load(tmp_path) == r
    missing = dataclasses.replace(
        r,
        alpha_star=None,
        beta_star=None,
        mse_star=None,
        converged=False,
        message="Desired error not necessarily achieved",
    )
    d = missing.to_dict()
    assert d["alpha_star"] is None
    assert EnergyLandscape.from_dict(json.loads(json.dumps(d, allow_nan=False))) == missing
    with pytest.raises(ResultsError, match="kind"):
        EnergyLandscape.from_dict({**d, "kind": "geoprobe.windtunnel"})
    with pytest.raises(ResultsError, match="damaged"):
        EnergyLandscape.from_dict({**d, "mse": [[0.1]]})


def test_landscape_figure_marks(planted_landscape):
    sz, _, r = planted_landscape
    marks = {"Bayes-optimal (α=1, β=1/σZ²)": (1.0, 1 / sz**2), "trained": (0.9, 3.0)}
    fig = landscape_figure(r, marks)
    names = [t.name for t in fig.data]
    assert set(marks) | {"grid min", "numerical min"} <= set(names)
    bayes = next(t for t in fig.data if t.name == "Bayes-optimal (α=1, β=1/σZ²)")
    assert (bayes.x[0], bayes.y[0]) == (1.0, 4.0)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert np.asarray(fig.data[0].z).shape == (len(BETAS), len(ALPHAS))
    with pytest.raises(GeoprobeError, match="trained"):
        landscape_figure(r, {"trained": (0.0, 1.0)})


def test_descent_round_trip_and_figure(tmp_path):
    X, q, c, _ = mixture(64, 3, 6, 2, 0.4, 0.1, seed=2)
    d = descent_comparison(X, q, c, 1.0, 6.0, n_steps=5, gamma=0.5, provenance={"seed": 2})
    assert len(d.mse) == len(d.energy) == len(d.token_distance) == 6 and d.gamma == 0.5
    d.save(tmp_path / "descent.json")
    assert DescentComparison.load(tmp_path) == d
    names = [t.name for t in descent_figure(d).data]
    assert "mean energy" in names and "MSE per coordinate vs clean" in names
    zero = descent_comparison(X, q, c, 1.0, 6.0, n_steps=0)
    assert zero.mse == (pytest.approx(float(((q - c) ** 2).mean())),) and zero.max_energy_increase == 0.0
    with pytest.raises(ResultsError, match="damaged"):
        DescentComparison.from_dict({**d.to_dict(), "mse": d.to_dict()["mse"][:2]})


# -- bad input ------------------------------------------------------------------------------------
def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize(
    "kw,flag",
    [
        (dict(alpha=0.0), "--alpha"),
        (dict(alpha=-1.0), "--alpha"),
        (dict(alpha=float("nan")), "--alpha"),
        (dict(beta=0.0), "--beta"),
        (dict(beta=-2.0), "--beta"),
        (dict(gamma=-0.1), "gamma"),
        (dict(n_steps=-1), "--descent-steps"),
        (dict(n_steps=1.5), "--descent-steps"),
    ],
)
def test_bad_parameters(kw, flag):
    X, q = random_context(seed=6)
    args = dict(alpha=1.0, beta=1.0, gamma=None, n_steps=2) | kw
    with pytest.raises(GeoprobeError) as e:
        descent_comparison(X, q, q, **args)
    msg = _one_line(e)
    assert flag in msg and str(next(iter(kw.values()))) in msg
    with pytest.raises(GeoprobeError, match="--descent-steps|--alpha|--beta|gamma"):
        descend(q, X, **args)


def test_bad_shapes_and_values():
    X, q = random_context(B=4, L=5, n=3, seed=7)
    cases = [
        lambda: attention_step(q, X[0], 1.0, 1.0),  # context not (B, L, n)
        lambda: attention_step(q[:, :2], X, 1.0, 1.0),  # dim mismatch
        lambda: attention_step(q[:3], X, 1.0, 1.0),  # batch mismatch
        lambda: energy(q, X[:, :0], 1.0, 1.0),  # empty context
        lambda: landscape(X, q, q[:, :2], (1.0,), (1.0,)),  # clean mismatched
        lambda: landscape(X, q, q, (2.0, 1.0), (1.0,)),  # unsorted grid
        lambda: landscape(X, q, q, (1.0,), (0.0, 1.0)),  # β grid not positive
        lambda: landscape(X, q, q, (), (1.0,)),  # empty grid
    ]
    for case in cases:
        with pytest.raises(GeoprobeError) as e:
            case()
        _one_line(e)
    bad = X.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(GeoprobeError, match="NaN"):
        energy(q, bad, 1.0, 1.0)
    with pytest.raises(GeoprobeError, match=r"\(4, 3\)"):
        attention_step(q[:, :2], X, 1.0, 1.0)


def test_results_validate_on_construction(planted_landscape):
    _, _, r = planted_landscape
    with pytest.raises(GeoprobeError, match="--alpha"):
        dataclasses.replace(r, alphas=(-1.0,) + r.alphas[1:])
    with pytest.raises(GeoprobeError, match="shape"):
        dataclasses.replace(r, mse=r.mse[:-1])
    X, q, c, _ = mixture(8, 2, 4, 1, 0.3, 0.0, seed=3)
    d = descent_comparison(X, q, c, 1.0, 2.0, n_steps=2)
    with pytest.raises(GeoprobeError, match="--beta"):
        dataclasses.replace(d, beta=0.0)
    with pytest.raises(GeoprobeError, match="n_steps"):
        dataclasses.replace(d, n_steps=3)
