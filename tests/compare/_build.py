"""Scan results written to disk without a model: planted value geometry, saved captures."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from geoprobe.capture.result import Capture
from geoprobe.models.layout import Layout
from geoprobe.provenance import Provenance, prompts_hash
from geoprobe.scan import ScanConfig, analyse

FAST = ScanConfig(n_resamples=40, pca_resamples=20, null_draws=20, n_permutations=40)
N = 30
L = 6


def prompts(n: int = N, tag: str = "shared") -> tuple[str, ...]:
    return tuple(f"{tag} prompt number {i}" for i in range(n))


def entropy(n: int = N, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 6.0, n)


def planted_values(latent: np.ndarray | None, D: int, seed: int, noise: float = 0.05, layers: int = L) -> np.ndarray:
    """(layers, n, D): every layer ``latent ⊗ axis + noise`` (pure noise when latent is None)."""
    rng = np.random.default_rng(seed)
    n = N if latent is None else len(latent)
    vals = rng.normal(size=(layers, n, D))
    if latent is not None:
        z = (latent - latent.mean()) / latent.std()
        axis = rng.normal(size=D)
        vals = noise * vals + z[None, :, None] * axis[None, None, :] * rng.uniform(0.5, 3.0, D)[None, None, :]
    return vals


def make_capture(
    model_id: str,
    values: np.ndarray,
    texts: tuple[str, ...],
    next_entropy: np.ndarray,
    *,
    Hkv: int = 2,
    H: int = 4,
    D_model: int = 32,
    seed: int = 0,
) -> tuple[Capture, np.ndarray]:
    """A capture whose final-token values are ``values`` (layers, n, Hkv·d), and a Gaussian 'init' W_K."""
    Lc, n, D = values.shape
    d = D // Hkv
    rng = np.random.default_rng(seed + 1000)
    w_k = rng.normal(0, 0.02, size=(Lc, Hkv, D_model, d))
    w_k[: Lc // 2] = np.stack(
        [[np.linalg.qr(rng.normal(size=(D_model, d)))[0] for _ in range(Hkv)] for _ in range(Lc // 2)]
    )  # orthonormal early layers
    init = rng.normal(0, 0.02, size=(Lc, Hkv, D_model, d))
    level = 4.0 * (1 - 0.1 * np.arange(Lc))
    attn = level[:, None, None] + rng.normal(0, 0.1, size=(Lc, n, H))
    layout = Layout(
        n_layers=Lc,
        n_heads=H,
        n_kv_heads=Hkv,
        d_head=d,
        d_model=D_model,
        vocab_size=100,
        rotary_dim=d,
        sliding_window=(None,) * Lc,
    )
    prov = Provenance(
        model_id=model_id,
        source="twin",
        weights=f"planted seed={seed}",
        tokenizer="none",
        dtype="float32",
        prompts_hash=prompts_hash(texts),
        seed=0,
    )
    cap = Capture(
        layers=tuple(range(Lc)),
        layout=layout,
        provenance=prov,
        prompts=tuple(texts),
        config={},
        n_tokens=np.full(n, 40),
        n_truncated=np.zeros(n, dtype=np.int64),
        next_entropy=np.asarray(next_entropy, dtype=np.float32),
        next_top_ids=np.zeros((n, 1), dtype=np.int64),
        next_top_probs=np.ones((n, 1), dtype=np.float32),
        attn_entropy=attn.astype(np.float32),
        values=values.reshape(Lc, n, Hkv, d).astype(np.float32),
        w_k=w_k.astype(np.float32),
    )
    return cap, init.astype(np.float32)


def write_scan(
    root: Path,
    name: str,
    cap: Capture,
    init: np.ndarray | None = None,
    prompts_name: str = "mixed",
    with_capture: bool = True,
) -> Path:
    """analyse() the capture and save ``root/name/results.json`` (+ ``capture/``); returns the file."""
    res = analyse(
        cap, FAST.updated(prompts=prompts_name), init_w_k=init, init_label=None if init is None else "gaussian init"
    )
    run = root / name
    if with_capture:
        cap.save(run / "capture")
        res = dataclasses.replace(res, capture_dir="capture")
    return res.save(run / "results.json")
