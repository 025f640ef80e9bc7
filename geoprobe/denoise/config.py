"""What ``geoprobe denoise`` / ``probes/denoise.toml`` run: :class:`DenoiseConfig`, and the seconds-scale
``tiny_config`` for tests and smoke runs."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from geoprobe.checks import Limit, check_limits, check_no_bools, check_seed
from geoprobe.denoise.tasks import DenoiseTask, check_convention, make_task, subspace_dim
from geoprobe.denoise.train import TrainSettings
from geoprobe.errors import GeoprobeError
from geoprobe.serial import Record
from geoprobe.tables import FlatTables

#: context lengths: 200× the default L = 500 (memory for n_eval prompts of that length is estimated as well)
LENGTH_MAX = 100_000
LENGTH_WHY = "200× the default L = 500"


@dataclass(frozen=True, eq=False)
class DenoiseConfig(FlatTables, Record):
    """What ``geoprobe denoise`` / ``probes/denoise.toml`` run. Variances are variances (σ², not σ);
    ``None`` task values take the paper's reference settings for the task. ``convention`` says how ``dim`` and
    ``transfer_dims`` are read on the sphere: ``None`` / ``"geoprobe"``, the dimension of the subspace that holds
    the sphere (S^{dim−1}); ``"authors"``, the sphere's own dimension as in the paper and its code (S^dim in a
    (dim+1)-dim subspace: their d = 8 is geoprobe's d = 9). Stored only when it is ``"authors"``."""

    TABLE: ClassVar[str] = "denoise"

    task: str = "linear"
    ambient: int = 16
    dim: int = 8
    clusters: int = 8
    signal_var: float | None = None
    noise_var: float | None = None
    radius: float = 1.0
    context_length: int = 500
    steps: int = 2000
    batch_size: int = 64
    lr: float = 0.01
    n_eval: int = 2000
    lengths: tuple[int, ...] = (20, 50, 100, 200, 500)
    transfer_dims: tuple[int, ...] = (2, 4, 8, 12)
    warp: bool = False
    warp_condition: float = 3.0
    energy: bool = True
    n_resamples: int = 1000
    seed: int = 0
    convention: str | None = field(default=None, metadata={"omit_none": True})

    #: upper limits (docs/denoise.md); their products are bounded by the memory estimate (:func:`peak_bytes`)
    LIMITS: ClassVar[dict[str, Limit]] = {
        "ambient": Limit(
            1024, "64× the paper's n = 16; every prompt's context estimator is an n × n eigenproblem", "--ambient"
        ),
        "dim": Limit(1024, "the ambient limit", "--dim"),
        "transfer_dims": Limit(1024, "the ambient limit", "--transfer-dims"),
        "clusters": Limit(1024, "128× the default 8 centres", "--clusters"),
        "context_length": Limit(LENGTH_MAX, LENGTH_WHY, "--context-length"),
        "lengths": Limit(LENGTH_MAX, LENGTH_WHY, "--lengths"),
        "steps": Limit.steps("--steps"),
        "batch_size": Limit(65_536, "1024× the default 64 prompts per step", "--batch-size"),
        "n_eval": Limit(1_000_000, "500× the default 2,000 held-out prompts", "--n-eval"),
        "n_resamples": Limit.resamples("--n-resamples"),
    }

    def __post_init__(self) -> None:
        check_no_bools(self, "denoise")
        check_seed(self.seed, "--seed (seed in a probe recipe)")
        object.__setattr__(self, "lengths", tuple(int(v) for v in self.lengths))
        object.__setattr__(self, "transfer_dims", tuple(int(v) for v in self.transfer_dims))
        check_limits(self, self.LIMITS)
        if self.convention is not None:
            check_convention(self.convention)
            if self.convention == "geoprobe":  # the default, stored as absent (configs from 0.1.0 hash the same)
                object.__setattr__(self, "convention", None)
        if self.authors_sphere:
            for what, values in (("--dim", (self.dim,)), ("--transfer-dims", self.transfer_dims)):
                for v in values:
                    if not 1 <= v <= self.ambient - 1:
                        raise GeoprobeError(
                            f"sphere dimension {v} in {what} (authors' convention: S^{v} in a {v + 1}-dim subspace) "
                            f"is not in [1, {self.ambient - 1}]; pass {what} between 1 and {self.ambient - 1} "
                            "(or raise --ambient)"
                        )
        task = self.make_task()
        self.settings()
        if self.n_eval < 8:
            raise GeoprobeError(f"n_eval {self.n_eval} is below 8 prompts; pass --n-eval 8 or more")
        if self.n_resamples < 1:
            raise GeoprobeError(f"n_resamples {self.n_resamples} is below 1; pass --n-resamples 1 or more")
        for L in self.lengths:
            if task.name in ("linear", "sphere") and L <= task.d:
                raise GeoprobeError(
                    f"context length {L} in --lengths is not larger than the subspace dimension "
                    f"{task.d}: the estimator is undefined; pass --lengths values of {task.d + 1} or more"
                )
            if L < 1:
                raise GeoprobeError(f"context length {L} in --lengths is below 1; pass --lengths values of 1 or more")
        for d in (self.subspace_dim(v) for v in self.transfer_dims):
            if task.name == "mixture":
                break
            low = 2 if task.name == "sphere" else 1
            if not low <= d <= task.n:
                raise GeoprobeError(
                    f"transfer dimension {d} is not in [{low}, ambient dimension {task.n}]; "
                    f"pass --transfer-dims values between {low} and {task.n}"
                )
            if task.context_length <= d:
                raise GeoprobeError(
                    f"context length {task.context_length} is not larger than the transfer dimension "
                    f"{d}: the estimator is undefined; pass --context-length {d + 1} or more"
                )
        if self.warp and not (math.isfinite(self.warp_condition) and self.warp_condition >= 1):
            raise GeoprobeError(
                f"warp condition number {self.warp_condition} is below 1; pass --warp-condition 1 or more"
            )

    @property
    def authors_sphere(self) -> bool:
        return self.convention == "authors" and self.task == "sphere"

    def subspace_dim(self, dim: int) -> int:
        """geoprobe's subspace dimension for a ``dim`` given in this config's convention."""
        return subspace_dim(self.task, dim, self.convention or "geoprobe")

    def make_task(self) -> DenoiseTask:
        return make_task(
            self.task,
            n=self.ambient,
            d=self.subspace_dim(self.dim),
            k=self.clusters,
            signal_var=self.signal_var,
            noise_var=self.noise_var,
            radius=self.radius,
            context_length=self.context_length,
        )

    def settings(self) -> TrainSettings:
        return TrainSettings(steps=self.steps, batch_size=self.batch_size, lr=self.lr)

    def config_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()


def evaluation_bytes(config: DenoiseConfig, n_eval: int | None = None) -> int:
    """Estimated peak memory (bytes) of the evaluation: ``n_eval`` prompts of the longest context L (the
    task's or a --lengths value), n dimensions, held at once with the context estimator's n × n moments
    (mixture: the k centres)::

        8·n_eval·(3·(L+1)·n + 2·n·m)     (m = n; mixture: m = k)

    Measured (peak RSS above the loaded process, CPU, bootstraps batched; n_eval, L, n → measured /
    estimated): 8000, 500, 16 → 1.29 / 1.55 GiB; 8000, 2000, 16 → 4.90 / 5.9 GiB; 2000, 300, 256 →
    4.38 / 5.7 GiB."""
    task = config.make_task()
    n, L = task.n, max((task.context_length, *config.lengths)) + 1
    m = task.k if task.name == "mixture" else n
    return 8 * (config.n_eval if n_eval is None else n_eval) * (3 * L * n + 2 * n * m)


def training_bytes(config: DenoiseConfig, batch_size: int | None = None) -> int:
    """Estimated peak memory (bytes) of one training step: ``8·batch·6·(L+1)·n`` (float64 prompts, their
    float32 copy, autograd). Measured: batch 8000, L 500, n 16 → 2.53 / 2.9 GiB estimated."""
    task = config.make_task()
    return 8 * (config.batch_size if batch_size is None else batch_size) * 6 * (task.context_length + 1) * task.n


def check_memory(config: DenoiseConfig) -> None:
    """Refuse, before training starts, a run whose training step or evaluation does not fit in the memory
    available (one line naming --batch-size or --n-eval and the largest value that fits)."""
    from geoprobe.capture.memory import check_memory as check

    fixes = "; pass a shorter --context-length or --lengths, or a smaller --ambient"
    check(
        lambda v: training_bytes(config, v),
        config.batch_size,
        what=f"training on batches of {config.batch_size} prompts of {config.context_length} tokens",
        flag="--batch-size",
        otherwise=f"not even --batch-size 1 fits{fixes}",
    )
    longest = max((config.context_length, *config.lengths))
    check(
        lambda v: evaluation_bytes(config, v),
        config.n_eval,
        what=f"the evaluation of {config.n_eval} prompts of up to {longest} tokens",
        flag="--n-eval",
        otherwise=f"not even --n-eval 8 fits{fixes}",
        low=8,
    )


#: seconds, not minutes: for tests and smoke runs
TINY = dict(
    ambient=6,
    dim=2,
    clusters=3,
    context_length=40,
    steps=60,
    batch_size=16,
    n_eval=64,
    lengths=(10, 40),
    transfer_dims=(2, 3),
    n_resamples=200,
    lr=0.05,
)


def tiny_config(**overrides: Any) -> DenoiseConfig:
    return DenoiseConfig(**{**TINY, **{k: v for k, v in overrides.items() if v is not None}})


__all__ = ["DenoiseConfig", "TINY", "check_memory", "evaluation_bytes", "tiny_config", "training_bytes"]
