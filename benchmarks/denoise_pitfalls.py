"""The two pitfalls of the authors' released denoising baselines, in numbers (docs/denoise.md quotes the output).

1. Sphere: the shrinkage A_m(κ) (mean resultant length of the posterior on a sphere in an m-dim subspace) by
   numerical quadrature, by geoprobe (I_{m/2}/I_{m/2−1}, geoprobe.denoise.bayes.vmf_mean_length) and by the
   released formula I_{m−3/2}/I_{m−5/2}; then the MSE each baseline reaches at the paper's sphere settings.
2. Mixture: the released baseline's weights count the query's own cluster id; its MSE against the uniform-weight
   Bayes posterior mean (geoprobe's oracle) on the same prompts, paired, in standard errors, at the authors'
   context lengths 20, 100 and 500 (their context length counts the query: L = 19, 99, 499 context tokens).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/denoise_pitfalls.py      # ≈ 1 min
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import quad

from geoprobe.denoise.authors import authors_bessel_ratio, authors_mixture_baseline, authors_sphere_baseline
from geoprobe.denoise.bayes import finite_context, oracle, per_prompt_mse, vmf_mean_length
from geoprobe.denoise.config import DenoiseConfig
from geoprobe.denoise.tasks import make_task, sample


def quadrature_mean_length(m: int, kappa: float) -> float:
    """E[t] under the density ∝ exp(κt)(1 − t²)^{(m−3)/2} on [−1, 1] (t = cosine to the mean direction)."""
    a = (m - 3) / 2
    kw = dict(weight="alg", wvar=(a, a), epsabs=0.0, epsrel=1e-12, limit=200)
    num = quad(lambda t: t * np.exp(kappa * (t - 1)), -1, 1, **kw)[0]
    den = quad(lambda t: np.exp(kappa * (t - 1)), -1, 1, **kw)[0]
    return num / den


def paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    d = a - b
    se = d.std(ddof=1) / np.sqrt(len(d))
    return float(d.mean()), float(d.mean() / se)


def sphere() -> None:
    print("| m (subspace) | paper's d | κ | quadrature | geoprobe − quadrature | released | released − quadrature |")
    print("|---|---|---|---|---|---|---|")
    for m in (3, 9):
        for kappa in (1.0, 5.0, 13.8, 50.0):
            q = quadrature_mean_length(m, kappa)
            ours = float(vmf_mean_length(np.array(kappa), m))
            theirs = float(authors_bessel_ratio(m, kappa))
            print(f"| {m} | {m - 1} | {kappa} | {q:.6f} | {ours - q:.1e} | {theirs:.6f} | {theirs - q:+.4f} |")
    print()
    print("| paper's d (ours) | Bayes MSE [± SE] | released baseline MSE | ratio | paired difference / SE |")
    print("|---|---|---|---|---|")
    for d in (2, 8):
        cfg = DenoiseConfig(task="sphere", convention="authors", dim=d, context_length=499)
        t = cfg.make_task()
        p = sample(t, 4000, np.random.default_rng([0, 7]))
        bayes = per_prompt_mse(oracle(t, p), p.clean)
        theirs = per_prompt_mse(authors_sphere_baseline(p.context, p.noisy, t.noise_var), p.clean)
        assert np.allclose(per_prompt_mse(finite_context(t, p), p.clean), bayes, atol=1e-12)
        _, z = paired(theirs, bayes)
        print(
            f"| {d} ({t.d}) | {bayes.mean():.5f} ± {bayes.std(ddof=1) / np.sqrt(len(bayes)):.5f} | "
            f"{theirs.mean():.5f} | {theirs.mean() / bayes.mean():.4f} | {z:+.1f} |"
        )


def mixture(n_prompts: int = 40_000, chunk: int = 2000) -> None:
    print(
        "| context length (theirs) | L | prompts | Bayes MSE | leaky (released) − Bayes | in SE | "
        "context-only counts − Bayes | in SE |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for L in (19, 99, 499):
        t = make_task("mixture", context_length=L)
        bayes, leaky, ctx = [], [], []
        for c in range(n_prompts // chunk):
            p = sample(t, chunk, np.random.default_rng([3, L, c]))
            bayes.append(per_prompt_mse(oracle(t, p), p.clean))
            args = (p.noisy, p.centres, p.labels, t.signal_var, t.noise_var)
            leaky.append(per_prompt_mse(authors_mixture_baseline(*args), p.clean))
            ctx.append(per_prompt_mse(authors_mixture_baseline(*args, include_query=False), p.clean))
        b, lk, cx = (np.concatenate(v) for v in (bayes, leaky, ctx))
        dl, zl = paired(lk, b)
        dc, zc = paired(cx, b)
        print(
            f"| {L + 1} | {L} | {len(b)} | {b.mean():.5f} | {dl:+.2e} | {zl:+.1f} | {dc:+.2e} | {zc:+.1f} |", flush=True
        )


if __name__ == "__main__":
    sphere()
    print()
    mixture()
