"""A training trajectory you can run offline (issue 30): a small Pythia-shaped GPT-NeoX trained on CPU on
the bundled corpora, its checkpoints published on Pythia's schedule (steps 0, 1, 2, 4, …, 512, then every
1,000) as Hugging Face model directories that ``geoprobe scan --model DIR`` loads, with a manifest
(``trajectory.json``) that maps each step to its directory. See docs/sweep.md."""

from __future__ import annotations

from geoprobe.lazy import lazy_names

#: every public name -> where it lives (``module:attribute``, or a submodule); imported on first use
_LAZY: dict[str, str] = {
    "report": "geoprobe.trajectory.report",
    "TrajectoryConfig": "geoprobe.trajectory.config:TrajectoryConfig",
    "TrajectoryError": "geoprobe.trajectory.config:TrajectoryError",
    "pythia_steps": "geoprobe.trajectory.config:pythia_steps",
    "CheckpointRecord": "geoprobe.trajectory.result:CheckpointRecord",
    "TrajectoryResult": "geoprobe.trajectory.result:TrajectoryResult",
    "step_of": "geoprobe.trajectory.result:step_of",
    "train_trajectory": "geoprobe.trajectory.train:train_trajectory",
}

__all__ = [
    "CheckpointRecord",
    "TrajectoryConfig",
    "TrajectoryError",
    "TrajectoryResult",
    "pythia_steps",
    "step_of",
    "train_trajectory",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
