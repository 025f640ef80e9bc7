"""One :class:`Experiment` per experiment package: what the recipe registry, ``geoprobe run``, ``geoprobe
report``, the command line, :func:`geoprobe.run` and the contract test (tests/test_experiments.py) know
of it. The one list of experiments is :data:`geoprobe.recipes.EXPERIMENTS`."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from geoprobe.checks import bool_arg, optional_str_arg, path_arg
from geoprobe.errors import ArgumentError, ProbeError
from geoprobe.experiment.reporter import Progress, Reporter, Stages, as_reporter
from geoprobe.models.options import LoadOptions, is_loaded_model, load_fields


@dataclass(frozen=True)
class OutputOptions:
    """Where a run writes (``out``; None: its default run directory), whether it may replace what
    geoprobe wrote there before (``force``), and static figures to export (``figures``: png, svg or
    pdf). ``parent``: the run directory this run is part of, when a run writes runs inside its own (the
    seeds of ``windtunnel run --seeds``, the scans of ``compare-models``); no other run may hold it.
    ``in_place``: the run writes into the run it reads (``windtunnel eval``), so it has no --out to
    choose instead and its messages offer --force alone. ``plotlyjs``: None, the page inlines plotly.js (one
    self-contained file); a relative URL, the page loads the one copy there (a sweep's cells:
    ``../../plotly.min.js``, written once by the sweep)."""

    out: Path | None = None
    force: bool = False
    figures: str | None = None
    parent: Path | None = None
    in_place: bool = False
    plotlyjs: str | None = None

    def __post_init__(self) -> None:  # the arguments of geoprobe.run and Experiment.run: refused before any work
        object.__setattr__(self, "out", path_arg(self.out, "out", "a run directory such as 'runs/scan'"))
        object.__setattr__(self, "parent", path_arg(self.parent, "parent", "the run directory this run is part of"))
        bool_arg(self.force, "force")
        bool_arg(self.in_place, "in_place")
        optional_str_arg(self.figures, "figures", "figures='png', 'svg' or 'pdf'")
        optional_str_arg(self.plotlyjs, "plotlyjs", "plotlyjs='../../plotly.min.js'")


def as_output(out: str | os.PathLike | OutputOptions | None) -> OutputOptions:
    """``out`` as :class:`OutputOptions` (a path: that run directory, nothing replaced)."""
    return out if isinstance(out, OutputOptions) else OutputOptions(out=out)


#: ``execute(config, model, output, reporter)``: model is LoadOptions, a LoadedModel, or None (no model)
Execute = Callable[[Any, Any, OutputOptions, Reporter], Any]


@dataclass(frozen=True)
class Experiment:
    """One experiment: its ``command`` (a recipe's ``[probe] command``), its ``config`` class (a frozen
    dataclass that reads and writes its recipe tables: ``from_tables(doc, path)`` / ``to_tables()``), the
    ``results`` classes of the files it writes (``FILE``, ``PAGE``, ``KIND``; the first is its own),
    ``execute`` (the work: config, model, output, reporter -> result; see :meth:`run`), the loading
    settings it honours (``loads``: fields of LoadOptions; ``model_given``: whether a loaded model may be
    passed instead), the flags of ``geoprobe run`` it honours (``flags``) and how they change its config
    (``with_flags(config, values)``), where a recipe holds its settings (``where``, for messages), how its
    progress stages are shown (``stages``), what an interrupted run keeps (``resumes``), the command line that
    runs it (``cli``, when it is not ``geoprobe <command>``) and its other command lines that keep the same work
    (``resumed_by``), ``check(config, model)``: checks of the two together
    before any work, and ``tiny()``: its smallest real run,
    ``(config, model or None)``, which the contract test runs."""

    command: str
    config: type
    results: tuple[type, ...]
    execute: Execute
    tiny: Callable[[], tuple[Any, Any]]
    loads: tuple[str, ...] = ()
    model_given: bool = False
    flags: frozenset[str] = frozenset({"seed"})
    with_flags: Callable[[Any, Mapping[str, Any]], Any] | None = None
    where: str = ""
    stages: Stages = Stages()
    resumes: str = ""
    cli: str = ""
    resumed_by: tuple[str, ...] = ()
    check: Callable[[Any, Any], None] | None = None

    @property
    def result(self) -> type:
        return self.results[0]

    @property
    def command_line(self) -> str:
        """The ``geoprobe`` command that runs it (``cli``, default its command)."""
        return self.cli or self.command

    def load_options(self, model: Any) -> Any:
        """``model`` as this experiment takes it: LoadOptions (from a name or LoadOptions), a LoadedModel
        where one may be given, or None for an experiment that loads no model. A loading setting it does
        not honour is refused in one line, never ignored."""
        if is_loaded_model(model):
            if not self.model_given:
                raise ArgumentError(
                    f"model is a LoadedModel, but {self.command} loads its models itself; pass LoadOptions or a name"
                )
            return model
        if model is None:
            load = LoadOptions()
        elif isinstance(model, str):
            load = LoadOptions(model=model)
        elif isinstance(model, LoadOptions):
            load = model
        else:
            raise ArgumentError(
                f"model is {type(model).__name__} ({model!r}); pass a model name, LoadOptions or a LoadedModel"
            )
        given = [f for f in load_fields() if getattr(load, f.name) != f.default and f.name not in self.loads]
        if given:
            flag = given[0].metadata["flag"]
            raise ProbeError(f"{flag} is not used by {self.command}, which loads no such model; drop it")
        if "model" not in self.loads:
            return load if self.loads else None
        return load.check()

    def run(
        self,
        config: Any = None,
        *,
        model: Any = None,
        out: str | os.PathLike | OutputOptions | None = None,
        progress: Progress | Reporter | None = None,
    ) -> Any:
        """Run ``config`` (default: the config class's defaults) into the run directory ``out`` (default:
        the command's, as on the command line): the results file, its page, data, and with
        ``OutputOptions(figures=...)`` static figures, exactly the files the command line writes; a run
        stopped early resumes from what it finished. ``model``: a name, LoadOptions or (where the
        experiment allows) a LoadedModel. ``progress(stage, done, total)`` is called as the work advances."""
        from geoprobe.checks import config_arg

        if config is None:
            try:
                config = self.config()
            except TypeError:  # a config without defaults for everything (compare-models' models)
                raise ArgumentError(f"{self.command} has no default config; pass a {self.config.__name__}") from None
        config = config_arg(config, self.config)
        reporter = as_reporter(progress)
        model = self.load_options(model)
        if self.check is not None:
            self.check(config, model)
        return self.execute(config, model, as_output(out), reporter)

    def changed(self, config: Any, **changes: Any) -> Any:
        """``config`` with fields replaced (a field it does not have is an ArgumentError naming it)."""
        known = {f.name for f in dataclasses.fields(self.config)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ArgumentError(
                f"{unknown[0]!r} is not a setting of {self.command} "
                f"({self.config.__name__}: {', '.join(sorted(known))})"
            )
        return dataclasses.replace(config, **changes) if changes else config
