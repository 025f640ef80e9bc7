"""Synthetic captures with planted geometry (no model): the scan pipeline's ground truth."""

from __future__ import annotations

import numpy as np

from geoprobe.capture.result import Capture
from geoprobe.models.layout import Layout
from geoprobe.provenance import Provenance, prompts_hash


def synthetic_capture(
    structured: bool,
    n: int = 80,
    L: int = 4,
    H: int = 4,
    Hkv: int = 2,
    d: int = 16,
    D: int = 64,
    seed: int = 0,
    model_id: str = "synthetic",
) -> tuple[Capture, np.ndarray]:
    """A capture and the W_K of a matching 'random init'.

    structured=True plants: value vectors on a rank-1 axis driven by next-token entropy (plus 5 %
    noise), orthonormal W_K columns, attention entropy falling 20 % of the first layer's per layer.
    structured=False: isotropic noise values, Gaussian W_K equal to the init, flat attention entropy.
    """
    rng = np.random.default_rng(seed)
    entropy = rng.uniform(0.0, 6.0, n)
    z = (entropy - entropy.mean()) / entropy.std()
    values = rng.normal(size=(L, n, Hkv * d))
    if structured:
        axis = rng.normal(size=Hkv * d)
        axis /= np.linalg.norm(axis)
        values = 0.05 * values + 4.0 * z[None, :, None] * axis[None, None, :] * np.sqrt(Hkv * d)
    gauss = rng.normal(0, 0.02, size=(L, Hkv, D, d))
    if structured:
        w_k = np.stack([[np.linalg.qr(rng.normal(size=(D, d)))[0] for _ in range(Hkv)] for _ in range(L)])
        level = 4.0 * (1 - 0.2 * np.arange(L))
    else:
        w_k = gauss
        level = np.full(L, 3.0)
    attn = level[:, None, None] + rng.normal(0, 0.1, size=(L, n, H))
    prompts = tuple(f"synthetic prompt {i}" for i in range(n))
    layout = Layout(
        n_layers=L,
        n_heads=H,
        n_kv_heads=Hkv,
        d_head=d,
        d_model=D,
        vocab_size=100,
        rotary_dim=d,
        sliding_window=(None,) * L,
    )
    prov = Provenance(
        model_id=model_id,
        source="twin",
        weights=f"planted seed={seed}",
        tokenizer="none",
        dtype="float32",
        prompts_hash=prompts_hash(prompts),
        seed=seed,
    )
    cap = Capture(
        layers=tuple(range(L)),
        layout=layout,
        provenance=prov,
        prompts=prompts,
        config={},
        n_tokens=np.full(n, 40),
        n_truncated=np.zeros(n, dtype=np.int64),
        next_entropy=entropy.astype(np.float32),
        next_top_ids=np.zeros((n, 1), dtype=np.int64),
        next_top_probs=np.ones((n, 1), dtype=np.float32),
        attn_entropy=attn.astype(np.float32),
        values=values.reshape(L, n, Hkv, d).astype(np.float32),
        keys=rng.normal(size=(L, n, Hkv, d)).astype(np.float32),
        w_k=w_k.astype(np.float32),
    )
    return cap, gauss.astype(np.float32)


def synthetic_null(cap: Capture, draws: int = 3, n_resamples: int = 200, seed: int = 0, first_seed: int = 100):
    """The random-init null of ``cap``'s scan: ``draws`` unstructured captures of the same shape (their own
    Gaussian W_K), reduced by the scan's own code on its shared resample indices."""
    from geoprobe.analysis.initnull import resample_indices
    from geoprobe.scan.nulls import null_of

    L, n = cap.values.shape[:2]
    Hkv, d = cap.values.shape[2:]
    shape = dict(n=n, L=L, H=cap.attn_entropy.shape[2], Hkv=Hkv, d=d, D=cap.layout.d_model)
    caps = [synthetic_capture(structured=False, seed=first_seed + j, **shape)[0] for j in range(draws)]
    idx = resample_indices(n, n_resamples, seed)
    seeds = tuple(first_seed + j for j in range(draws))
    return null_of([(c, c.w_k) for c in caps], "twin", "synthetic random init", seeds, idx)
