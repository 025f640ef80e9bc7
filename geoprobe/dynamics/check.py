"""The paper's two closed forms against autograd, on the head ``geoprobe dynamics`` trains (arXiv
2512.22473 §3): for one seed's initial weights and training sequence, in float64, autograd's ∂L/∂s
(scores), ∂L/∂v (values) and u = ∂L/∂o (outputs) of the causal head, against the routing law
``routing_gradient(α, u, v)``, the value gradient ``value_gradient(α, u)`` and the value update
``value_update(α, u, η)`` of :mod:`geoprobe.analysis.gradients` (η = the EM-like schedule's value rate)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from geoprobe.analysis.gradients import routing_gradient, value_gradient, value_update
from geoprobe.serial import Record


@dataclass(frozen=True, eq=False)
class GradientCheck(Record):
    """One seed's check: the largest |closed form − autograd| of each identity, beside the largest
    |autograd| entry it is measured against (the scale that makes the difference read as rounding)."""

    seed: int
    routing_max_abs_diff: float  # ∂L/∂s_ij = α_ij (b_ij − E_α_i[b])
    routing_max_abs: float
    value_max_abs_diff: float  # ∂L/∂v_j = Σ_i α_ij u_i
    value_max_abs: float
    update_max_abs_diff: float  # Δv_j = −η Σ_i α_ij u_i against −η · autograd's ∂L/∂v_j
    update_lr: float  # η

    @property
    def max_relative(self) -> float:
        """The largest difference relative to its scale, over the three identities."""
        return max(
            self.routing_max_abs_diff / max(self.routing_max_abs, 1e-300),
            self.value_max_abs_diff / max(self.value_max_abs, 1e-300),
            self.update_max_abs_diff / max(self.update_lr * self.value_max_abs, 1e-300),
        )


def gradient_check(w: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, lr: float, seed: int) -> GradientCheck:
    """Autograd against the closed forms for the head ``w`` (W_Q, W_K, W_V, W_O) on inputs ``x`` (T × d_x)
    and targets ``y`` (T,), in float64; ``lr`` is the step size of the value update."""
    w64 = {k: t.detach().to(torch.float64) for k, t in w.items()}
    x64 = x.detach().to(torch.float64)
    q, k = x64 @ w64["W_Q"], x64 @ w64["W_K"]
    v = (x64 @ w64["W_V"]).requires_grad_(True)
    T = x64.shape[0]
    scores = (q @ k.T / (w64["W_Q"].shape[1] ** 0.5)).requires_grad_(True)
    masked = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), float("-inf"))
    alpha = torch.softmax(masked, dim=-1)
    o = alpha @ v
    o.retain_grad()
    F.cross_entropy(o @ w64["W_O"], y).backward()
    a, u, vv = alpha.detach().numpy(), o.grad.numpy(), v.detach().numpy()  # type: ignore[union-attr]
    ds, dv = scores.grad.numpy(), v.grad.numpy()  # type: ignore[union-attr]
    return GradientCheck(
        seed=seed,
        routing_max_abs_diff=float(np.abs(routing_gradient(a, u, vv) - ds).max()),
        routing_max_abs=float(np.abs(ds).max()),
        value_max_abs_diff=float(np.abs(value_gradient(a, u) - dv).max()),
        value_max_abs=float(np.abs(dv).max()),
        update_max_abs_diff=float(np.abs(value_update(a, u, lr) - (-lr * dv)).max()),
        update_lr=float(lr),
    )
