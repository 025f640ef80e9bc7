"""Planted orthonormal W_K, per architecture (issue 18): written through the ProjSpec's location.

For every architecture of ``tests/models/test_attention.py`` (all of them have W_K; MLA is not
among ARCHS; one without would be skipped saying why), its tiny twin (restored afterwards) gets, in every attention
layer, a W_K
whose columns are orthonormal in each KV head (QR of a seeded Gaussian), written with
:meth:`ProjSpec.set_weight` into the projection the architecture probe located (separate
``k_proj``, fused ``[q|k|v]``, per-head interleave, legacy modules). Then:

* ``key_weight_views()`` returns exactly the planted tensors (bitwise);
* the other parts of a fused projection (q and v rows) are unchanged;
* the key-orthogonality analyser (``head_orthogonality``) reports mean |cos| < ORTHO_TOL = 1e-6
  for every head (float32 orthonormal columns give ~1e-8);
* probing the planted model again finds the same key projection (the keys the attention
  function receives are reproduced by the planted W_K).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from geoprobe.analysis.orthogonality import head_orthogonality
from geoprobe.models.architecture import inspect_model
from tests.models.test_attention import ARCHS, twin

ORTHO_TOL = 1e-6


def orthonormal(n_heads: int, d_model: int, d_head: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(n_heads, d_model, d_head, generator=g, dtype=torch.float64))
    return q.float()


@pytest.mark.parametrize("model_type", ARCHS)
def test_planted_orthonormal_key_weights_read_back_and_measure_zero(model_type):
    model, arch = twin(model_type)  # the session's cached twin: its weights are restored below
    if arch.key_weights_reason:
        pytest.skip(f"{model_type} has no W_K: {arch.key_weights_reason}")
    saved = copy.deepcopy(model.state_dict())
    try:
        _plant_and_check(model, arch)
    finally:
        model.load_state_dict(saved)


def _plant_and_check(model, arch) -> None:
    planted = []
    for i, layer in enumerate(arch.layout.model_layers):
        spec, attn = arch.k_specs[layer], arch.modules[layer]
        linear = spec.linear(attn)
        before = linear.weight.detach().clone()
        w = orthonormal(spec.n_heads, arch.layout.d_model, spec.d_head, seed=i)
        spec.set_weight(attn, w)
        planted.append(w)
        changed = linear.weight.detach() != before
        rows = changed.t() if spec.transposed else changed
        touched = set(rows.any(dim=1).nonzero().flatten().tolist())
        assert touched <= set(spec.row_index().flatten().tolist())  # q/v rows of a fused map untouched
    views = arch.key_weight_views()
    for w, v in zip(planted, views):
        assert torch.equal(v, w)
    ortho = head_orthogonality(np.stack([v.numpy() for v in views]))
    assert ortho.shape == (arch.layout.n_layers, arch.layout.n_kv_heads)
    assert ortho.max() < ORTHO_TOL, ortho.max()
    again = inspect_model(model)
    assert again.k_specs == arch.k_specs and not again.key_weights_reason
