"""Progress on stderr for every long stage: rich bars with counts, elapsed time and an ETA on a terminal;
elsewhere (a log file, a pipe, a job scheduler's output, where rich draws nothing) one plain line per
stage every :data:`EVERY_ENV` seconds (default 10), with the same counts and ETA, so that a long run
is never silent (issue 27: a million-line prompt file showed nothing for an estimated 1.7 hours). A step
without counts (:func:`status`: loading a model, training a tokenizer) is a spinner on a terminal and, elsewhere,
one line naming it once it has run 2 s (issue 39: a piped ``geoprobe sula`` said nothing for 1.5 minutes while
its model loaded)."""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

from geoprobe.cli.app import err
from geoprobe.text import inert

EVERY_ENV = "GEOPROBE_PROGRESS_EVERY"  # seconds between plain progress lines where stderr is not a terminal
EVERY_DEFAULT = 10.0
STATUS_ENV = "GEOPROBE_STATUS_AFTER"  # seconds a step without counts runs before its line, off a terminal
STATUS_DEFAULT = 2.0

Report = Callable[[str, int, int], None]  # (stage, done, total)


def clock(seconds: float) -> str:
    """``seconds`` as H:MM:SS."""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class LineProgress:
    """Plain progress lines on ``console``, "LABEL: DONE/TOTAL (P %), H:MM:SS elapsed, about H:MM:SS left":
    for each bar at most one every ``every`` seconds, and one whenever a bar moves on to a new stage (a
    new label); nothing in the display's first ``every`` seconds, so a quick command prints none."""

    def __init__(self, console=err, every: float = EVERY_DEFAULT, now: Callable[[], float] = time.monotonic) -> None:
        self.console, self.every, self.now = console, every, now
        self.t0 = now()
        self.started: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.label: dict[str, str] = {}

    def update(self, key: str, label: str, done: int, total: Optional[int]) -> None:
        t = self.now()
        start = self.started.setdefault(key, t)
        moved_on = self.label.get(key) != label
        self.label[key] = label
        if t - self.t0 < self.every or not (moved_on or t - self.last.get(key, start) >= self.every):
            return
        self.last[key] = t
        elapsed = t - start
        line = f"{label}: {done:,}" + (f"/{total:,} ({100 * done / total:.0f} %)" if total else "")
        line += f", {clock(elapsed)} elapsed"
        if total and 0 < done < total:
            line += f", about {clock(elapsed * (total - done) / done)} left"
        self.console.print(line, highlight=False, markup=False, soft_wrap=True)


def every_seconds() -> float:
    """The interval of plain progress lines: ``$GEOPROBE_PROGRESS_EVERY`` seconds, default 10."""
    return seconds_from(EVERY_ENV, EVERY_DEFAULT)


def status_seconds() -> float:
    """How long a step without counts runs before its line is printed where stderr is not a terminal:
    ``$GEOPROBE_STATUS_AFTER`` seconds, default 2 (0: as it starts)."""
    return seconds_from(STATUS_ENV, STATUS_DEFAULT)


def seconds_from(env: str, default: float) -> float:
    """``$env`` as a number of seconds (0 or more), ``default`` where it is unset or empty."""
    from geoprobe.errors import GeoprobeError

    text = os.environ.get(env)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise GeoprobeError(f"{env}={text!r} is not a number of seconds (0 or more); fix or unset it")
    return value


@contextmanager
def status(text: str) -> Iterator[None]:
    """A step without counts, ``text`` saying what it does ("loading smollm2-135m …"): a spinner on stderr
    while it runs where stderr is a terminal. Elsewhere, where rich draws no spinner, ``text`` as one line
    once the step has run :func:`status_seconds` (2 s; at once with 0): a log shows what a long step is
    doing, while a quick one (a tiny model's load before a one-line error) prints nothing."""
    if err.is_terminal:
        with err.status(text):
            yield
        return
    after = status_seconds()
    if after == 0:
        say(text)
        yield
        return
    timer = threading.Timer(after, say, (text,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def say(text: str) -> None:
    """``text`` as one plain line on stderr."""
    err.print(text, highlight=False, markup=False, soft_wrap=True)


@contextmanager
def stage_progress(
    labels: Optional[dict] = None, width: int = 22, group: Optional[Callable[[str], str]] = None
) -> Iterator[Report]:
    """A progress display on stderr, one bar per stage (``group(stage)`` names the bar a stage advances:
    several stages can share one, whose label is then the current stage's); yields
    ``progress(stage, done, total)``. Rich bars on a terminal, plain lines elsewhere (:class:`LineProgress`)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    def label_of(stage: str) -> str:  # escaped: a stage name may come from a file (never markup either)
        return inert((labels or {}).get(stage) or stage)

    key_of = group or (lambda s: s)
    if not err.is_terminal:
        lines = LineProgress(err, every_seconds())
        yield lambda stage, done, total: lines.update(key_of(stage), label_of(stage), done, total)
        return
    columns = (
        TextColumn(f"{{task.description:<{width}}}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err, transient=True) as bar:
        tasks: dict = {}

        def progress(stage: str, done: int, total: int) -> None:
            key = key_of(stage)
            if key not in tasks:
                tasks[key] = bar.add_task(label_of(stage), total=total)
            bar.update(tasks[key], completed=done, total=total, description=label_of(stage))

        yield progress
