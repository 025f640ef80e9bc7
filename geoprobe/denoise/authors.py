"""The baselines of the authors' released code (github.com/mattsmart/in-context-denoising, ``src/data_tools.py`` and
``src/nn_loss_baselines.py``), written here from their description, for comparison only: both are known to be
wrong, and no geoprobe score uses them. docs/denoise.md ("Two pitfalls in the released baselines") has the numbers.

* Sphere: the posterior-mean shrinkage is I_{m−3/2}(κ)/I_{m−5/2}(κ) with m the dimension of the subspace that
  holds the sphere (their ``bessel_ratio_subhalf_sub3half(m − 1, κ)``). The von Mises–Fisher mean length is
  I_{m/2}(κ)/I_{m/2−1}(κ) (the paper's own Eq. (6) with m = d + 1); the two agree only at m = 3 (the 2-sphere).
* Mixture: the component weights are the frequencies of the prompt's sampled cluster ids, and the ids counted
  include the query's own (their context length counts the query token). That leaks the answer's cluster into
  the estimator, which then beats the Bayes-optimal (uniform-weight) posterior mean on average — something no
  function of the prompt can do.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float, Int
from scipy.special import ive

from geoprobe.denoise.bayes import mixture_oracle


def authors_bessel_ratio(
    m: int | Float[np.ndarray, "..."], kappa: Float[np.ndarray, "..."]
) -> Float[np.ndarray, "..."]:
    """The released sphere shrinkage I_{m−3/2}(κ)/I_{m−5/2}(κ) for a sphere in an m-dim subspace (exact at m = 3
    only; :func:`geoprobe.denoise.bayes.vmf_mean_length` is the correct I_{m/2}/I_{m/2−1})."""
    m = np.asarray(m, dtype=np.float64)
    kappa = np.asarray(kappa, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ive(m - 1.5, kappa) / ive(m - 2.5, kappa)


def authors_sphere_baseline(
    context: Float[np.ndarray, "B L n"],
    noisy: Float[np.ndarray, "B n"],
    noise_var: float,
    eig_cutoff: float = 1e-4,
) -> Float[np.ndarray, "B n"]:
    """The released sphere baseline: subspace from the *centred* context covariance (eigenvalues above
    ``eig_cutoff``; m = their number), the affine projection x̄ + P(x̃ − x̄), radius = the first context token's
    norm, then :func:`authors_bessel_ratio` (m, R‖proj‖/σZ²) · R · proj/‖proj‖."""
    L = context.shape[1]
    mean = context.mean(axis=1)
    centred = context - mean[:, None, :]
    w, v = np.linalg.eigh(np.einsum("bli,blj->bij", centred, centred) / L)
    keep = w > eig_cutoff  # (B, n)
    m = keep.sum(axis=1)
    basis = v * keep[:, None, :]  # the columns below the cutoff are zeroed
    proj = mean + np.einsum("bij,bkj,bk->bi", basis, basis, noisy - mean)
    radius = np.linalg.norm(context[:, 0], axis=-1)
    r = np.linalg.norm(proj, axis=-1)
    shrink = authors_bessel_ratio(m, radius * r / noise_var)
    return (shrink * radius / r)[:, None] * proj


def count_weights(labels: Int[np.ndarray, "B L1"], k: int, include_query: bool) -> Float[np.ndarray, "B k"]:
    """Component frequencies per prompt from the sampled ids (the query's id is the last column): with
    ``include_query`` as the released baseline counts them (the leak), else from the context tokens only."""
    ids = labels if include_query else labels[:, :-1]
    counts = np.stack([(ids == a).sum(axis=1) for a in range(k)], axis=1).astype(np.float64)
    return counts / counts.sum(axis=1, keepdims=True)


def authors_mixture_baseline(
    noisy: Float[np.ndarray, "B n"],
    centres: Float[np.ndarray, "B n k"],
    labels: Int[np.ndarray, "B L1"],
    signal_var: float,
    noise_var: float,
    include_query: bool = True,
) -> Float[np.ndarray, "B n"]:
    """The released mixture baseline: the posterior mean of Prop. 4 with the weights w = the frequencies of the
    sampled ids, the query's own id included (``include_query=False``: context ids only, which does not leak).
    A component with no count gets weight 0 (log 0 = −inf in the softmax), as in the released code."""
    w = count_weights(labels, centres.shape[-1], include_query)
    with np.errstate(divide="ignore"):
        return mixture_oracle(noisy, centres, signal_var, noise_var, w)


__all__ = ["authors_bessel_ratio", "authors_sphere_baseline", "count_weights", "authors_mixture_baseline"]
