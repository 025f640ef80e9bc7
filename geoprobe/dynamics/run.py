"""``geoprobe dynamics``: one attention head trained on the sticky chain by plain SGD and by the
EM-like two-timescale update, from the same initialisation, seed by seed (arXiv 2512.22473 §5.2;
the protocol of the authors' ``em_vs_sgd_multiseed.py``)."""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

from geoprobe.checks import config_arg
from geoprobe.dynamics.check import gradient_check
from geoprobe.dynamics.config import DynamicsConfig
from geoprobe.dynamics.result import DynamicsResult, SeedRun
from geoprobe.dynamics.task import conditional_entropy_nats, sample, transition_matrix
from geoprobe.provenance import package_versions

ROUTING = ("W_Q", "W_K", "W_O")
#: steps between the kept states of a schedule (an interrupted run goes on from the last one)
BLOCK = 100


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
    losses: list[float] | None = None,
    keep: Callable[[dict[str, torch.Tensor], list[float]], None] | None = None,
) -> list[float]:
    """Full-batch gradient descent with a learning rate per weight; the loss before each step. Given
    ``losses`` (the curve so far), ``w0`` is the state after them and training goes on from there;
    ``keep(weights, losses)`` is called every :data:`BLOCK` steps and at the end."""
    w = {k: t.clone().requires_grad_(True) for k, t in w0.items()}
    losses = list(losses or [])
    for _ in range(len(losses), steps):
        loss = head_loss(w, x, y)
        losses.append(float(loss.detach()))
        grads = torch.autograd.grad(loss, list(w.values()))
        with torch.no_grad():
            for (name, t), g in zip(w.items(), grads):
                t -= lrs[name] * g
        if tick is not None:
            tick()
        if keep is not None and (len(losses) % BLOCK == 0 or len(losses) == steps):
            keep({k: t.detach() for k, t in w.items()}, losses)
    return losses


def _schedule(
    units: Any, key: str, w0: dict[str, torch.Tensor], x: Any, y: Any, lrs: dict[str, float], steps: int, tick: Any
) -> list[float]:
    """One schedule of one seed, resumed from the last block ``units`` kept (if any) and kept as it goes."""
    start, losses = w0, []
    kept = None if units is None else units.get(key)
    if kept is not None:
        arrays = kept[0]
        losses = [float(v) for v in arrays.pop("losses")]
        start = {k: torch.from_numpy(v) for k, v in arrays.items()}

    def keep(w: dict[str, torch.Tensor], so_far: list[float]) -> None:
        units.put(key, {**{k: t.numpy() for k, t in w.items()}, "losses": np.asarray(so_far, dtype=np.float64)})

    if tick is not None and losses:
        tick(len(losses))
    return train(start, x, y, lrs, steps, None if tick is None else (lambda: tick(1)), losses, keep if units else None)


def run_dynamics(
    config: DynamicsConfig = DynamicsConfig(),
    *,
    progress: Callable[[str, int, int], None] | None = None,
    units: Any = None,
) -> DynamicsResult:
    """Train both schedules for every seed; the result holds the loss curves and the comparison, and each
    seed's check of the routing law and the value update against autograd at its initial weights.
    ``progress("train", done, total)`` is called after every step (of ``seeds`` × 2 × ``steps``);
    ``units`` (:class:`geoprobe.experiment.Units`) keeps each schedule's weights and losses every
    :data:`BLOCK` steps, and a rerun goes on from them (the same numbers, bit for bit)."""
    config = config_arg(config, DynamicsConfig)
    P = transition_matrix(config.n_symbols, config.self_prob)
    sgd = dict.fromkeys(("W_Q", "W_K", "W_V", "W_O"), config.lr)
    em = {**dict.fromkeys(ROUTING, config.lr_routing), "W_V": config.lr_value}
    total, done = config.seeds * 2 * config.steps, [0]

    def tick(n: int) -> None:
        done[0] += n
        progress("train", done[0], total)  # type: ignore[misc]

    runs, checks = [], []
    for s in range(config.seeds):
        seed = config.seed + s
        x, y = sample(P, config.length, config.d_x, seed)
        w0 = init_weights(config, seed)
        checks.append(gradient_check(w0, x, y, config.lr_value, seed))
        curves = {
            name: _schedule(units, f"{seed}.{name}", w0, x, y, lrs, config.steps, tick if progress else None)
            for name, lrs in (("sgd", sgd), ("em", em))
        }
        runs.append(SeedRun(seed=seed, sgd=tuple(curves["sgd"]), em=tuple(curves["em"])))
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
