"""``geoprobe dynamics``: one attention head trained on the sticky chain by plain SGD and by the
EM-like two-timescale update, from the same initialisation, seed by seed (arXiv 2512.22473 §5.2;
the protocol of the authors' ``em_vs_sgd_multiseed.py``)."""

from __future__ import annotations

import datetime as dt
from typing import Callable

import torch
import torch.nn.functional as F

from geoprobe.checks import config_arg
from geoprobe.dynamics.check import gradient_check
from geoprobe.dynamics.config import DynamicsConfig
from geoprobe.dynamics.result import DynamicsResult, SeedRun
from geoprobe.dynamics.task import conditional_entropy_nats, sample, transition_matrix
from geoprobe.provenance import package_versions

ROUTING = ("W_Q", "W_K", "W_O")


def init_weights(config: DynamicsConfig, seed: int) -> dict[str, torch.Tensor]:
    """W_Q, W_K (d_x × d_k), W_V (d_x × d_v), W_O (d_v × n_symbols), each N(0, 0.1²)."""
    g = torch.Generator().manual_seed(seed)
    shapes = {
        "W_Q": (config.d_x, config.d_k),
        "W_K": (config.d_x, config.d_k),
        "W_V": (config.d_x, config.d_v),
        "W_O": (config.d_v, config.n_symbols),
    }
    return {k: torch.randn(*s, generator=g) * 0.1 for k, s in shapes.items()}


def head_loss(w: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats) of the causal single head: softmax(QKᵀ/√d_k) V W_O."""
    q, k, v = x @ w["W_Q"], x @ w["W_K"], x @ w["W_V"]
    scores = q @ k.T / (w["W_Q"].shape[1] ** 0.5)
    T = x.shape[0]
    scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), float("-inf"))
    return F.cross_entropy(torch.softmax(scores, dim=-1) @ v @ w["W_O"], y)


def train(
    w0: dict[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    lrs: dict[str, float],
    steps: int,
    tick: Callable[[], None] | None = None,
) -> list[float]:
    """Full-batch gradient descent with a learning rate per weight; the loss before each step."""
    w = {k: t.clone().requires_grad_(True) for k, t in w0.items()}
    losses = []
    for _ in range(steps):
        loss = head_loss(w, x, y)
        losses.append(float(loss.detach()))
        grads = torch.autograd.grad(loss, list(w.values()))
        with torch.no_grad():
            for (name, t), g in zip(w.items(), grads):
                t -= lrs[name] * g
        if tick is not None:
            tick()
    return losses


def run_dynamics(
    config: DynamicsConfig = DynamicsConfig(), *, tick: Callable[[], None] | None = None
) -> DynamicsResult:
    """Train both schedules for every seed; the result holds the loss curves and the comparison, and each
    seed's check of the routing law and the value update against autograd at its initial weights."""
    config = config_arg(config, DynamicsConfig)
    P = transition_matrix(config.n_symbols, config.self_prob)
    sgd = dict.fromkeys(("W_Q", "W_K", "W_V", "W_O"), config.lr)
    em = {**dict.fromkeys(ROUTING, config.lr_routing), "W_V": config.lr_value}
    runs, checks = [], []
    for s in range(config.seeds):
        seed = config.seed + s
        x, y = sample(P, config.length, config.d_x, seed)
        w0 = init_weights(config, seed)
        checks.append(gradient_check(w0, x, y, config.lr_value, seed))
        runs.append(
            SeedRun(
                seed=seed,
                sgd=tuple(train(w0, x, y, sgd, config.steps, tick)),
                em=tuple(train(w0, x, y, em, config.steps, tick)),
            )
        )
    return DynamicsResult(
        config=config,
        floor_nats=conditional_entropy_nats(P),
        runs=tuple(runs),
        provenance={
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "versions": package_versions(),
            "seeds": [r.seed for r in runs],
        },
        gradient_checks=tuple(checks),
    )
