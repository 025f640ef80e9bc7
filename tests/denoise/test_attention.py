"""The attention denoisers against explicit numpy loops, and the weight-structure fit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geoprobe.denoise.attention import LinearAttention, SoftmaxAttention, make_model, predict, weight_fit
from geoprobe.errors import GeoprobeError


def _weights(model, rng, n):
    kq, pv = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    with torch.no_grad():
        model.W_KQ.copy_(torch.from_numpy(kq))
        model.W_PV.copy_(torch.from_numpy(pv))
    return kq, pv


def test_forward_matches_explicit_numpy():
    rng = np.random.default_rng(0)
    B, L, n = 3, 7, 4
    X = rng.standard_normal((B, L, n))
    q = rng.standard_normal((B, n))
    lin, soft = LinearAttention(n).double(), SoftmaxAttention(n).double()
    kq, pv = _weights(lin, rng, n)
    _weights(soft, np.random.default_rng(0), n)  # re-seeded below for an independent pair
    kq2, pv2 = _weights(soft, rng, n)
    for b in range(B):
        Xb = X[b].T  # n × L, columns are tokens (the paper's convention)
        want_lin = pv @ (Xb @ Xb.T / L) @ kq @ q[b]
        s = Xb.T @ kq2 @ q[b]
        a = np.exp(s - s.max())
        a /= a.sum()
        want_soft = pv2 @ Xb @ a
        got_lin = lin(torch.from_numpy(X), torch.from_numpy(q))[b].detach().numpy()
        got_soft = soft(torch.from_numpy(X), torch.from_numpy(q))[b].detach().numpy()
        assert np.allclose(got_lin, want_lin, atol=1e-12) and np.allclose(got_soft, want_soft, atol=1e-12)
    out = predict(soft, X, q, chunk=2)  # chunked float64 prediction == one pass
    assert np.allclose(out, soft(torch.from_numpy(X), torch.from_numpy(q)).detach().numpy(), atol=1e-12)


def test_the_query_is_not_read_as_context():
    rng = np.random.default_rng(1)
    X = torch.from_numpy(rng.standard_normal((2, 5, 3)))
    q = torch.from_numpy(rng.standard_normal((2, 3)))
    m = SoftmaxAttention(3).double()
    with torch.no_grad():
        m.W_KQ.zero_()
        m.W_PV.copy_(torch.eye(3, dtype=torch.float64))
    assert torch.allclose(m(X, q), X.mean(1))  # uniform attention over the L context tokens only


def test_weight_fit():
    c, r = weight_fit(3.0 * np.eye(4))
    assert c == pytest.approx(3.0) and r == pytest.approx(0.0)
    W = np.zeros((4, 4))
    W[0, 1] = 1
    c, r = weight_fit(W)
    assert c == 0 and r == pytest.approx(1.0)
    S = np.diag([1.0, 2.0, 3.0, 4.0])
    c, r = weight_fit(0.5 * S, S)
    assert c == pytest.approx(0.5) and r == pytest.approx(0.0, abs=1e-12)


def test_unknown_model():
    with pytest.raises(GeoprobeError, match="softmax or linear"):
        make_model("mlp", 3)
