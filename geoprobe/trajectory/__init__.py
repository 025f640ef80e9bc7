"""A training trajectory you can run offline (issue 30): a small Pythia-shaped GPT-NeoX trained on CPU on
the bundled corpora, its checkpoints published on Pythia's schedule (steps 0, 1, 2, 4, …, 512, then every
1,000) as Hugging Face model directories that ``geoprobe scan --model DIR`` loads, with a manifest
(``trajectory.json``) that maps each step to its directory. See docs/sweep.md."""

from __future__ import annotations

import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:  # each name imported on first use (PEP 562): importing a submodule stays cheap
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = importlib.import_module(module)
    value = getattr(value, attr) if attr else value
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
