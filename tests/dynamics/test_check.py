"""geoprobe.dynamics.check: the routing law and the value update against autograd on the trained head."""

from __future__ import annotations

import numpy as np
import pytest

import geoprobe.dynamics.check as check
from geoprobe.dynamics.config import DynamicsConfig
from geoprobe.dynamics.run import init_weights
from geoprobe.dynamics.task import sample, transition_matrix

CFG = DynamicsConfig(length=80, steps=2, seeds=2)


@pytest.mark.parametrize("seed", [0, 7])
def test_closed_forms_equal_autograd_to_rounding(seed):
    x, y = sample(transition_matrix(8, 0.3), CFG.length, CFG.d_x, seed)
    c = check.gradient_check(init_weights(CFG, seed), x, y, 0.1, seed)
    assert c.seed == seed and c.update_lr == 0.1
    assert c.routing_max_abs > 1e-6 and c.value_max_abs > 1e-6  # real gradients, not zeros
    assert c.routing_max_abs_diff <= 1e-12 * c.routing_max_abs and c.value_max_abs_diff <= 1e-12 * c.value_max_abs
    assert c.update_max_abs_diff <= 1e-12 * 0.1 * c.value_max_abs and c.max_relative < 1e-12


def test_a_wrong_routing_law_is_caught(monkeypatch):
    """Without the query's attention-weighted mean (∂L/∂s_ij = α_ij b_ij) the check reports a difference
    of the gradients' own size: it measures the closed form, it does not assume it."""
    x, y = sample(transition_matrix(8, 0.3), CFG.length, CFG.d_x, 3)
    w = init_weights(CFG, 3)
    right = check.gradient_check(w, x, y, 0.1, 3)
    monkeypatch.setattr(check, "routing_gradient", lambda a, u, v: a * (u @ np.swapaxes(v, -1, -2)))
    wrong = check.gradient_check(w, x, y, 0.1, 3)
    assert wrong.routing_max_abs_diff > 0.01 * wrong.routing_max_abs > 1e6 * right.routing_max_abs_diff
    assert wrong.value_max_abs_diff == right.value_max_abs_diff  # the value gradient is untouched
