"""A training trajectory you can run offline (issue 30): a small Pythia-shaped GPT-NeoX trained on CPU on
the bundled corpora, its checkpoints published on Pythia's schedule (steps 0, 1, 2, 4, …, 512, then every
1,000) as Hugging Face model directories that ``geoprobe scan --model DIR`` loads, with a manifest
(``trajectory.json``) that maps each step to its directory. See docs/sweep.md."""

from geoprobe.trajectory import report as report  # the page of TrajectoryResult: registered on import
from geoprobe.trajectory.config import TrajectoryConfig, TrajectoryError, pythia_steps
from geoprobe.trajectory.result import CheckpointRecord, TrajectoryResult, step_of
from geoprobe.trajectory.train import train_trajectory

__all__ = [
    "CheckpointRecord",
    "TrajectoryConfig",
    "TrajectoryError",
    "TrajectoryResult",
    "pythia_steps",
    "step_of",
    "train_trajectory",
]
