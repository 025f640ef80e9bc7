"""What a run tells whoever started it, as it goes: progress of its stages, and a few lines of what happened.

Every experiment's ``run(config, *, model=None, out=None, progress=None)`` takes ``progress``: a plain
callable ``progress(stage, done, total)`` (a notebook's progress bar, a scheduler's log, a test's list) or
a :class:`Reporter`. Library code reports only through a :class:`Reporter` (:func:`as_reporter` wraps a
plain callable); the base class forwards progress to the callable and keeps everything else to itself,
except warnings, which it warns. The command line's reporter (``geoprobe.cli.common``) draws the bars
with an ETA, prints the lines, and prints each finished result's summary."""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(frozen=True)
class Stages:
    """How a run's progress stages are shown: ``labels`` (stage -> label; default the stage's own
    name), the label column's ``width``, and ``rest``: the one bar every stage without a label advances
    (its label then the current stage's), or None for a bar per stage."""

    labels: Mapping[str, str] = field(default_factory=dict)
    width: int = 22
    rest: str | None = None


class Reporter:
    """A run's progress and messages. ``reporter(stage, done, total)`` reports progress; ``say`` a line of
    what happened (the command line: stdout), ``note`` a line about the run (stderr), ``warn`` a warning,
    ``status`` a step without counts, ``stages`` the stages of one (possibly nested) run, and ``shown`` a
    result finished and written (the command line prints its summary)."""

    def __init__(self, progress: Progress | None = None) -> None:
        self.progress = progress

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)

    def say(self, text: str, *, soft_wrap: bool = False) -> None:
        """A line of what happened."""

    def note(self, text: str, *, soft_wrap: bool = True) -> None:
        """A line about the run, beside its output (where it resumed from, …)."""

    def warn(self, message: str) -> None:
        """A warning raised while the run computed (re-issued here so that callers see it once)."""
        warnings.warn(message, stacklevel=2)

    @contextmanager
    def status(self, text: str) -> Iterator[None]:
        """A step whose length is not counted (loading a model, writing figures)."""
        yield

    @contextmanager
    def stages(self, stages: Stages) -> Iterator[None]:
        """While one run computes: how its stages are shown."""
        yield

    def shown(self, result: Any) -> None:
        """A result has been computed and written."""


def as_reporter(progress: Progress | Reporter | None) -> Reporter:
    """``progress`` as a :class:`Reporter` (a plain callable, or None for silence)."""
    if isinstance(progress, Reporter):
        return progress
    from geoprobe.checks import callable_arg

    return Reporter(callable_arg(progress, "progress", "progress(stage, done, total)"))
