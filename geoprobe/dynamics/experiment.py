"""``dynamics`` as an experiment: the sticky-chain training into ``runs/dynamics`` (dynamics.json,
dynamics.html), its progress reported step by step; a run stopped part-way goes on from the weights and
losses each schedule kept every 100 steps in ``<run>/dynamics.partial``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

from geoprobe.dynamics.config import DynamicsConfig
from geoprobe.dynamics.result import DynamicsResult
from geoprobe.experiment import Experiment, OutputOptions, Reporter, Stages, Units, run_into
from geoprobe.rundir import RunOutputs
from geoprobe.version import __version__

PARTIAL = "dynamics.partial"
OUTPUTS = RunOutputs.of(DynamicsResult, partial=PARTIAL)
STAGES = Stages({"train": "training"})


def with_flags(config: DynamicsConfig, v: Mapping[str, Any]) -> DynamicsConfig:
    return config if v.get("seed") is None else dataclasses.replace(config, seed=v["seed"])


def execute(config: DynamicsConfig, model: None, output: OutputOptions, reporter: Reporter) -> DynamicsResult:
    """Train both schedules for every seed: dynamics.json and dynamics.html (default runs/dynamics)."""
    import torch

    from geoprobe.dynamics.run import run_dynamics

    target = output.out or Path("runs") / "dynamics"
    request = {"command": "dynamics", "config": dataclasses.asdict(config)}

    def compute(run: Any) -> DynamicsResult:
        fingerprint = {"geoprobe": __version__, "torch": torch.__version__, "config": dataclasses.asdict(config)}
        return run_dynamics(config, progress=reporter, units=Units(target / PARTIAL, fingerprint, "dynamics run"))

    return run_into(target, OUTPUTS, DynamicsResult, request, output, compute, reporter, stages=STAGES)


def tiny() -> tuple[DynamicsConfig, None]:
    """Two seeds of a short chain, 30 steps each."""
    return DynamicsConfig(steps=30, seeds=2, length=60), None


EXPERIMENT = Experiment(
    command="dynamics",
    config=DynamicsConfig,
    results=(DynamicsResult,),
    execute=execute,
    tiny=tiny,
    with_flags=with_flags,
    where="its [dynamics] table (geoprobe dynamics --help)",
    stages=STAGES,
    resumes="each schedule's weights and losses, every 100 steps, in <run>/dynamics.partial",
)
