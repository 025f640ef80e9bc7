"""TrajectoryResult: the manifest of a trained checkpoint series (``trajectory.json``) and its page.

It maps each training step to its checkpoint directory (relative to the trajectory's directory) and
holds what a sweep needs to place a checkpoint: the step, tokens seen, learning rate, training and
held-out loss, the weights' sha256, plus the training config, the data's hashes, the seed and the
versions. ``step_of(DIR)`` reads a checkpoint directory's step back from the manifest beside it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from geoprobe.errors import ResultsError
from geoprobe.report.page import Page
from geoprobe.results import Result
from geoprobe.serial import Record
from geoprobe.trajectory.config import TrajectoryConfig
from geoprobe.trajectory.data import DataRecord


@dataclass(frozen=True, eq=False)
class CheckpointRecord(Record):
    """One published checkpoint: a Hugging Face model directory (config.json, model.safetensors and
    the tokenizer files) that ``geoprobe scan --model DIR`` loads."""

    step: int
    path: str  # relative to the trajectory's directory, POSIX separators
    tokens: int  # training tokens seen before it (step × batch_size × seq_len)
    lr: float  # learning rate of the update that produced it (0 at step 0)
    train_loss: float  # nats/token: mean over the (up to) 20 updates before it; step 0: its loss on batch 0
    eval_loss: float  # nats/token on the held-out windows (NaN when no document is held out)
    sha256: str  # of model.safetensors
    bytes: int  # of the whole directory

    @property
    def revision(self) -> str:
        """Pythia's name for this checkpoint on the Hub (``step512``)."""
        return f"step{self.step}"


@dataclass(frozen=True, eq=False)
class ModelRecord(Record):
    architecture: str
    n_params: int
    n_embedding_params: int  # input and output embeddings (untied)
    vocab_size: int
    rotary_dims: int  # per head


@dataclass(frozen=True, eq=False)
class TrajectoryResult(Result, Page):
    KIND: ClassVar[str] = "geoprobe.trajectory"
    FILE: ClassVar[str] = "trajectory.json"
    PAGE: ClassVar[str | None] = "trajectory.html"
    WHAT: ClassVar[str] = "trajectory manifest"
    FIX: ClassVar[str] = "pass the directory 'geoprobe trajectory' wrote (or its trajectory.json), or re-run it"

    config: TrajectoryConfig
    model: ModelRecord
    data: DataRecord
    checkpoints: tuple[CheckpointRecord, ...]
    losses: tuple[float, ...]  # training loss (nats/token) of every step, before its update
    train_s: float  # wall-clock of the training steps, summed over resumed sessions
    resumed_from: int | None  # the step the last session started from (None: trained in one go)
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        steps = [c.step for c in self.checkpoints]
        if steps != sorted(set(steps)) or len(self.losses) != self.config.steps:
            raise ValueError("checkpoints must be in step order, once each, and losses one per step")

    # -- lookups --------------------------------------------------------------------------------
    @property
    def steps(self) -> tuple[int, ...]:
        return tuple(c.step for c in self.checkpoints)

    def checkpoint(self, step: int | str) -> CheckpointRecord:
        """The checkpoint of ``step`` (an int, or Pythia's revision name ``"step512"``)."""
        key = step
        if isinstance(step, str):
            text = step.removeprefix("step")
            key = int(text) if text.isdigit() else -1
        for c in self.checkpoints:
            if c.step == key:
                return c
        raise ResultsError(
            f"trajectory has no checkpoint {step!r}; it holds steps {', '.join(map(str, self.steps))}: pass one of them"
        )

    def directory(self, step: int | str, root: str | os.PathLike) -> Path:
        """The checkpoint directory of ``step`` inside the trajectory directory ``root``."""
        return Path(root) / self.checkpoint(step).path

    @property
    def final(self) -> CheckpointRecord:
        return self.checkpoints[-1]

    @property
    def total_bytes(self) -> int:
        return sum(c.bytes for c in self.checkpoints)


def step_of(directory: str | os.PathLike) -> int | None:
    """The training step of a checkpoint directory that ``geoprobe trajectory`` wrote (read from the
    trajectory.json two levels up), or None when it is not one."""
    d = Path(directory).resolve()
    manifest = d.parent.parent / TrajectoryResult.FILE
    if not manifest.is_file():
        return None
    result = TrajectoryResult.load(manifest)
    for c in result.checkpoints:
        if (manifest.parent / c.path).resolve() == d:
            return c.step
    return None
