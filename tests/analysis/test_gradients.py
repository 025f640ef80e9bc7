"""The routing law and the value update of one attention head (geoprobe.analysis.gradients) against
torch autograd, float64, planted inputs of several shapes, two losses; tolerance 1e-12 (absolute,
on gradients of order 1)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from geoprobe.analysis.gradients import advantages, routing_gradient, softmax, value_gradient, value_update

SHAPES = [(1, 2, 1), (3, 5, 4), (8, 8, 15), (2, 17, 10)]  # (queries, keys, d_v); (8, 8, 15): the sticky chain's d_v


def losses(o: torch.Tensor, target: torch.Tensor) -> dict[str, torch.Tensor]:
    return {"squared": 0.5 * ((o - target) ** 2).sum(), "log-cosh": torch.log(torch.cosh(o - target)).sum()}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("loss", ["squared", "log-cosh"])
def test_routing_and_value_gradients_equal_autograd(shape, loss):
    q, k, dv = shape
    rng = np.random.default_rng([SHAPES.index(shape), ("squared", "log-cosh").index(loss)])
    s = torch.tensor(rng.normal(scale=2.0, size=(q, k)), dtype=torch.float64, requires_grad=True)
    v = torch.tensor(rng.normal(size=(k, dv)), dtype=torch.float64, requires_grad=True)
    target = torch.tensor(rng.normal(size=(q, dv)), dtype=torch.float64)
    alpha = torch.softmax(s, dim=-1)
    o = alpha @ v
    o.retain_grad()
    losses(o, target)[loss].backward()
    a, u, vv = alpha.detach().numpy(), o.grad.numpy(), v.detach().numpy()
    np.testing.assert_allclose(softmax(s.detach().numpy()), a, atol=1e-15)
    np.testing.assert_allclose(routing_gradient(a, u, vv), s.grad.numpy(), atol=1e-12, rtol=0)
    np.testing.assert_allclose(value_gradient(a, u), v.grad.numpy(), atol=1e-12, rtol=0)
    np.testing.assert_allclose(value_update(a, u, 0.1), -0.1 * v.grad.numpy(), atol=1e-13, rtol=0)


def test_batched_over_leading_axes_and_advantages_average_to_zero():
    rng = np.random.default_rng(0)
    s, u, v = rng.normal(size=(4, 3, 6)), rng.normal(size=(4, 3, 5)), rng.normal(size=(4, 6, 5))
    a = softmax(s)
    adv = advantages(a, u, v)
    np.testing.assert_allclose((a * adv).sum(-1), 0.0, atol=1e-14)  # E_α[b − E_α b] = 0
    np.testing.assert_allclose(routing_gradient(a, u, v).sum(-1), 0.0, atol=1e-14)  # softmax is shift-invariant
    for i in range(4):
        np.testing.assert_allclose(routing_gradient(a, u, v)[i], routing_gradient(a[i], u[i], v[i]), atol=0)
        np.testing.assert_allclose(value_gradient(a, u)[i], value_gradient(a[i], u[i]), atol=0)


def test_planted_case_by_hand():
    """Two keys, one query, one value dimension: α = (e/(1+e), 1/(1+e)) for s = (1, 0); u = 1;
    v = (2, −1): b = (2, −1), E_α[b] = (2e − 1)/(1 + e), ∂L/∂s_0 = α_0 (2 − E_α[b])."""
    e = np.e
    a = softmax(np.array([[1.0, 0.0]]))
    np.testing.assert_allclose(a, [[e / (1 + e), 1 / (1 + e)]], rtol=1e-15)
    mean = (2 * e - 1) / (1 + e)
    g = routing_gradient(a, np.array([[1.0]]), np.array([[2.0], [-1.0]]))
    np.testing.assert_allclose(g, [[a[0, 0] * (2 - mean), a[0, 1] * (-1 - mean)]], rtol=1e-14)
