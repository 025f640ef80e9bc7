"""Training the one-layer denoisers: Adam, step-decayed learning rate, fresh prompts every step.

We draw fresh prompts each step (an online stream; the authors train on a fixed set of 800 prompts), so the training
loss is an unbiased estimate of the test loss and no prompt is seen twice. Float32 training; seeded: the model's
initialisation from a torch.Generator, the prompts from numpy's default_rng, both from ``seed``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from geoprobe.denoise.attention import MODELS, make_model
from geoprobe.denoise.tasks import DenoiseTask, sample
from geoprobe.errors import GeoprobeError
from geoprobe.threads import torch_threads

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class TrainSettings:
    """Optimiser settings: Adam(lr), lr × ``decay`` at 80 % and again at 90 % of ``steps`` (the authors' schedule)."""

    steps: int = 1500
    batch_size: int = 64
    lr: float = 0.01
    decay: float = 0.1
    init_scale: float = 0.01

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise GeoprobeError(f"steps {self.steps} is below 1; pass --steps 1 or more")
        if self.batch_size < 1:
            raise GeoprobeError(f"batch size {self.batch_size} is below 1; pass --batch-size 1 or more")
        if not self.lr > 0:
            raise GeoprobeError(f"learning rate {self.lr} is not positive; pass --lr above 0")

    def milestones(self) -> list[int]:
        return sorted({max(1, int(0.8 * self.steps)), max(1, int(0.9 * self.steps))})


def _stream(seed: int, kind: str, salt: int) -> int:
    return [seed, MODELS.index(kind), salt]  # type: ignore[return-value]


def train_model(
    task: DenoiseTask,
    kind: str,
    settings: TrainSettings,
    *,
    seed: int = 0,
    warp: np.ndarray | None = None,
    salt: int = 0,
    progress: Progress | None = None,
    stage: str | None = None,
) -> tuple[torch.nn.Module, dict[str, Any]]:
    """Train ``kind`` (softmax | linear) attention on fresh prompts of ``task``; returns (model, log)."""
    if kind not in MODELS:
        raise GeoprobeError(f"unknown model {kind!r}; pass softmax or linear")
    gen = torch.Generator().manual_seed(int(np.random.SeedSequence(_stream(seed, kind, salt)).generate_state(1)[0]))
    rng = np.random.default_rng(_stream(seed, kind, salt))
    model = make_model(kind, task.n, gen, settings.init_scale)
    opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=settings.milestones(), gamma=settings.decay)
    t0 = time.perf_counter()
    stage = stage or f"train {kind}"
    with torch_threads(1):  # these tensors are tiny: one thread is fastest, and immune to a busy machine
        losses = _loop(task, model, opt, sched, settings, rng, warp, progress, stage)
    seconds = time.perf_counter() - t0
    tail = max(1, settings.steps // 10)
    log = {
        "model": kind,
        "steps": settings.steps,
        "batch_size": settings.batch_size,
        "lr": settings.lr,
        "milestones": settings.milestones(),
        "decay": settings.decay,
        "seconds": seconds,
        "final_loss": float(np.mean(losses[-tail:])),
        "loss_curve": [float(np.mean(losses[i : i + tail])) for i in range(0, len(losses), tail)],
        "data": "fresh prompts every step",
    }
    return model, log


def _loop(
    task: DenoiseTask,
    model: torch.nn.Module,
    opt: Any,
    sched: Any,
    settings: TrainSettings,
    rng: np.random.Generator,
    warp: np.ndarray | None,
    progress: Progress | None,
    stage: str,
) -> list[float]:
    losses: list[float] = []
    for step in range(settings.steps):
        p = sample(task, settings.batch_size, rng, warp=warp)
        X = torch.from_numpy(p.context).float()
        q = torch.from_numpy(p.noisy).float()
        y = torch.from_numpy(p.clean).float()
        loss = torch.mean((model(X, q) - y) ** 2)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if progress is not None and (step % 20 == 0 or step == settings.steps - 1):
            progress(stage, step + 1, settings.steps)
    return losses
