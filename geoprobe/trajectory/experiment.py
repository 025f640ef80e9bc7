"""``trajectory`` as an experiment: a small Pythia-shaped GPT-NeoX trained on the bundled corpora into
``runs/trajectory`` (checkpoints/stepN, trajectory.json, trajectory.html); a run stopped part-way goes on
from its last published checkpoint and the optimiser state in ``<run>/resume``, bit for bit."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

from geoprobe.experiment import Experiment, OutputOptions, Reporter, Stages, run_into
from geoprobe.rundir import RunOutputs
from geoprobe.trajectory.config import TrajectoryConfig
from geoprobe.trajectory.result import TrajectoryResult
from geoprobe.trajectory.store import CHECKPOINTS, RESUME, check_checkpoints_dir, check_resume_dir

OUTPUTS = RunOutputs.of(
    TrajectoryResult, data={CHECKPOINTS: check_checkpoints_dir, RESUME: check_resume_dir}, partial=RESUME
)
DEFAULT_OUT = Path("runs") / "trajectory"
STAGES = Stages({"training": "training"})


def with_flags(config: TrajectoryConfig, v: Mapping[str, Any]) -> TrajectoryConfig:
    return config if v.get("seed") is None else dataclasses.replace(config, seed=v["seed"])


def execute(config: TrajectoryConfig, model: None, output: OutputOptions, reporter: Reporter) -> TrajectoryResult:
    """Train (resuming) into ``output.out`` (default runs/trajectory)."""
    from geoprobe.trajectory.memory import check_trajectory_memory
    from geoprobe.trajectory.train import check_resumable, train_trajectory

    check_trajectory_memory(config)  # before anything is read or written: the flags that make it fit
    target = output.out or DEFAULT_OUT
    check_resumable(config, target)  # before the claim: the settings to pass, not --force
    request = {"command": "trajectory", "config": dataclasses.asdict(config)}

    def compute(run: Any) -> TrajectoryResult:
        return train_trajectory(config, out=run.dir, progress=reporter)

    return run_into(
        target,
        OUTPUTS,
        TrajectoryResult,
        request,
        output,
        compute,
        reporter,
        stages=STAGES,
        need_bytes=config.estimated_bytes(),
    )


def tiny() -> tuple[TrajectoryConfig, None]:
    """Eight steps of a 2-layer model on one domain."""
    return TrajectoryConfig(
        steps=8,
        layers=2,
        hidden_size=32,
        heads=2,
        vocab_size=300,
        domains=("math",),
        seq_len=16,
        batch_size=2,
        eval_windows=2,
    ), None


EXPERIMENT = Experiment(
    command="trajectory",
    config=TrajectoryConfig,
    results=(TrajectoryResult,),
    execute=execute,
    tiny=tiny,
    with_flags=with_flags,
    where="its [trajectory] table (geoprobe trajectory --help)",
    stages=STAGES,
    resumes="the published checkpoints and the optimiser state in <run>/resume",
)
