"""A first look at a capture: per-layer attention entropy and value-manifold dimensionality.

This is the summary `geoprobe scan` prints; the full analysers (bootstrap CIs, matched
nulls, key orthogonality, scorecard, HTML report) build on the same Capture.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from geoprobe.capture.result import Capture


def standardised_spectrum(x: np.ndarray) -> np.ndarray:
    """Explained-variance ratios of PCA on column-standardised ``x`` (float64).

    Columns with zero variance are dropped; the ratios sum to 1.
    """
    x = np.asarray(x, dtype=np.float64)
    x = x - x.mean(0)
    sd = x.std(0)
    x = x[:, sd > 1e-12] / sd[sd > 1e-12]
    s = np.linalg.svd(x, compute_uv=False)
    lam = s**2
    return lam / lam.sum() if lam.sum() > 0 else lam


def summarise(cap: Capture) -> dict[str, Any]:
    rows = []
    for i, layer in enumerate(cap.layers):
        ent = cap.attn_entropy[i].mean(1)  # per prompt, averaged over heads
        row: dict[str, Any] = {
            "layer": layer,
            "attn_entropy_mean": float(ent.mean()),
            "attn_entropy_sd": float(ent.std(ddof=1)) if len(ent) > 1 else 0.0,
        }
        if cap.values is not None:
            v = cap.values_flat(layer)
            ratios = standardised_spectrum(v)
            row["value_pc1"] = float(ratios[0]) if len(ratios) else float("nan")
            row["value_participation_ratio"] = float(1.0 / np.sum(ratios**2)) if len(ratios) else float("nan")
            row["value_norm_mean"] = float(np.linalg.norm(v, axis=1).mean())
        rows.append(row)
    return {
        "model": cap.provenance.model_id,
        "n_prompts": cap.n_prompts,
        "next_entropy_mean": float(cap.next_entropy.mean()),
        "layers": rows,
        "note": "preview: PCA on n prompts is biased upward when n < dimension; compare with a matched null",
    }


def write_summary(summary: dict[str, Any], cap: Capture, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "summary.json"
    payload = dict(summary, provenance=cap.provenance.to_dict())
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(path)
    return path
