"""``denoise`` as an experiment: in-context denoising with one attention layer into
``runs/denoise-TASK`` (denoise.json, denoise.html); a run stopped part-way resumes from the models it
trained, kept in ``<run>/denoise.partial``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

from geoprobe.denoise.config import DenoiseConfig, tiny_config
from geoprobe.denoise.result import DenoiseResult
from geoprobe.experiment import Experiment, OutputOptions, Reporter, Units, run_into
from geoprobe.rundir import RunOutputs
from geoprobe.version import __version__

PARTIAL = "denoise.partial"
OUTPUTS = RunOutputs.of(DenoiseResult, partial=PARTIAL)


def with_flags(config: DenoiseConfig, v: Mapping[str, Any]) -> DenoiseConfig:
    given = {k: v[k] for k in ("seed", "batch_size") if v.get(k) is not None}
    return dataclasses.replace(config, **given) if given else config


def execute(config: DenoiseConfig, model: None, output: OutputOptions, reporter: Reporter) -> DenoiseResult:
    """Train and evaluate: denoise.json and denoise.html in the run directory (default runs/denoise-TASK)."""
    import torch

    from geoprobe.denoise.config import check_memory
    from geoprobe.denoise.run import run_denoise

    check_memory(config)  # before the run directory is claimed
    target = output.out or Path("runs") / f"denoise-{config.task}"
    request = {"command": "denoise", "config": dataclasses.asdict(config)}

    def compute(run: Any) -> DenoiseResult:
        fingerprint = {"geoprobe": __version__, "torch": torch.__version__, "config": dataclasses.asdict(config)}
        return run_denoise(config, progress=reporter, units=Units(target / PARTIAL, fingerprint, "denoise run"))

    return run_into(target, OUTPUTS, DenoiseResult, request, output, compute, reporter)


def tiny() -> tuple[DenoiseConfig, None]:
    """The seconds-scale preset (``--tiny``) on the sphere, fewer steps and resamples."""
    return tiny_config(task="sphere", steps=30, n_resamples=20, seed=3), None


EXPERIMENT = Experiment(
    command="denoise",
    config=DenoiseConfig,
    results=(DenoiseResult,),
    execute=execute,
    tiny=tiny,
    flags=frozenset({"batch_size", "seed"}),
    with_flags=with_flags,
    where="its [denoise] table (geoprobe denoise --help)",
    resumes="the trained models in <run>/denoise.partial",
)
