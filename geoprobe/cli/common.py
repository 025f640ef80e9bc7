"""What the commands share: loading a model, tables, and running an experiment.

A command parses its flags into a config and calls :func:`launch`, which runs the experiment (the same
``Experiment.run`` as ``geoprobe.run`` and notebooks) with a :class:`CliReporter`: progress bars with an
ETA on stderr, the run's lines on stdout, and each finished result's summary, printed by the function
its command registered with :func:`prints`."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

from rich.table import Table

from geoprobe.cli.app import err, out
from geoprobe.cli.progress import stage_progress, status
from geoprobe.experiment import Experiment, OutputOptions, Reporter, Stages
from geoprobe.models.loading import LoadOptions

#: result class -> how the command line prints its summary (registered by each command's module)
PRINTERS: dict[type, Callable[[Any, "CliReporter"], None]] = {}


def prints(*classes: type) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``fn(result, reporter)`` as the summary the command line prints for results of ``classes``."""

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        for cls in classes:
            PRINTERS[cls] = fn
        return fn

    return register


class CliReporter(Reporter):
    """A run's progress and messages on the terminal: one progress display at a time (opened at the first
    progress report of a run, closed before a status line, a summary or the next run's stages), lines
    on stdout, notes and warnings on stderr."""

    def __init__(self) -> None:
        super().__init__()
        self.warned: set[str] = set()  # warnings printed as they arose (a summary does not repeat them)
        self._stages: list[Stages] = [Stages()]
        self._display: tuple[Any, Callable[[str, int, int], None]] | None = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self._display is None:
            s = self._stages[-1]
            labels = dict(s.labels)
            group = None if s.rest is None else (lambda name: name if name in labels else s.rest)
            cm = stage_progress(labels or None, width=s.width, group=group)
            self._display = (cm, cm.__enter__())
        self._display[1](stage, done, total)

    def close(self) -> None:
        """End the progress display (its bars are transient)."""
        if self._display is not None:
            cm, self._display = self._display[0], None
            cm.__exit__(None, None, None)

    def say(self, text: str, *, soft_wrap: bool = False) -> None:
        out.print(text, highlight=False, soft_wrap=soft_wrap)

    def note(self, text: str, *, soft_wrap: bool = True) -> None:
        err.print(text, highlight=False, soft_wrap=soft_wrap)

    def warn(self, message: str) -> None:
        self.warned.add(message)
        err.print(f"warning: {message}", highlight=False)

    @contextmanager
    def status(self, text: str) -> Iterator[None]:
        self.close()
        with status(text):  # a spinner on a terminal, a line elsewhere
            yield

    @contextmanager
    def stages(self, stages: Stages) -> Iterator[None]:
        self.close()
        self._stages.append(stages)
        try:
            yield
        finally:
            self.close()
            self._stages.pop()

    def shown(self, result: Any) -> None:
        self.close()
        printer = PRINTERS.get(type(result))
        if printer is None:  # its command's module was not imported (the command line imports one command)
            from geoprobe.cli.lazy import import_commands

            import_commands()
            printer = PRINTERS.get(type(result))
        if printer is not None:
            printer(result, self)


def launch(experiment: Experiment, config: Any, model: Any, output: OutputOptions) -> Any:
    """Run ``experiment`` with ``config`` into ``output`` as the command line does (progress, lines, summary)."""
    reporter = CliReporter()
    try:
        return experiment.run(config, model=model, out=output, progress=reporter)
    finally:
        reporter.close()


@contextmanager
def reporting() -> Iterator[CliReporter]:
    """A :class:`CliReporter` for a command that is not one experiment's run (train, eval, report, compare)."""
    reporter = CliReporter()
    try:
        yield reporter
    finally:
        reporter.close()


def open_model(load: LoadOptions) -> Any:
    """Load the model ``load`` names, with a status line on stderr."""
    with status(f"loading {load.model} …"):
        return load.load()


def say_prompts_read(path: str, prompts: Sequence[str]) -> None:
    """On stdout, before the model loads: which file the prompts were read from and how many."""
    from geoprobe.prompts import prompts_read_line

    out.print(prompts_read_line(path, prompts), highlight=False, soft_wrap=True)


def print_rows(title: str, rows: Sequence[dict]) -> None:
    """A rich table on stdout from rows of {column: text} (the columns of the first row)."""
    table = Table(title=title)
    for col in rows[0]:
        table.add_column(col)
    for r in rows:
        table.add_row(*r.values())
    out.print(table)


def check_figures(fmt: Optional[str]) -> Optional[str]:
    """--figures FMT, checked before any model loads: the format and a Chromium."""
    from geoprobe.experiment import check_figures as check

    return check(fmt)


def write_report(result: Any, target: Path, fmt: Optional[str], force: bool) -> Path:
    """``geoprobe report``: ``result``'s page (and figures) written to ``target`` (geoprobe.experiment.write_page)."""
    from geoprobe.experiment import write_page

    with reporting() as reporter:
        return write_page(result, target, fmt, force, reporter)
