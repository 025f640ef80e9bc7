"""The experiments geoprobe runs, listed once, and what is derived from that list.

:data:`EXPERIMENTS` names every experiment package; each declares its :class:`~geoprobe.experiment.Experiment`
(``geoprobe/<name>/experiment.py``: command, config class, result classes, run). Everything that knows
the experiments reads them from here: the recipe registry (:data:`RECIPES`, command -> experiment),
:func:`load_probe` (a recipe's tables become its config), :func:`load_result` and ``geoprobe report``
(:data:`KINDS`, every results kind -> its class), ``geoprobe run`` and the command line's commands
(geoprobe.cli), :func:`run` (``geoprobe.run``) and the contract test (tests/test_experiments.py).

Adding an experiment: its package (docs/architecture.md), then its name in :data:`EXPERIMENTS`.
"""

from __future__ import annotations

import functools
import importlib
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from geoprobe.checks import bool_arg, callable_arg, name_arg
from geoprobe.errors import ArgumentError, ProbeError, ResultsError
from geoprobe.experiment import Experiment, OutputOptions
from geoprobe.models.options import LoadOptions, is_loaded_model, load_fields
from geoprobe.paths import read_json, read_regular
from geoprobe.tables import dumps, typed

#: every experiment package (``geoprobe.<name>``, whose ``experiment`` module declares ``EXPERIMENT``)
EXPERIMENTS: tuple[str, ...] = (
    "scan",
    "domains",
    "compare",
    "sula",
    "intervene",
    "windtunnel",
    "denoise",
    "positional",
    "dynamics",
    "trajectory",
)

__all__ = [
    "EXPERIMENTS",
    "Probe",
    "experiment",
    "experiment_named",
    "experiments",
    "find_results",
    "load_probe",
    "load_result",
    "recipe_text",
    "result_class",
    "result_files",
    "run",
]


def experiment_of_package(name: str) -> Experiment:
    """The experiment package ``geoprobe.<name>`` declares."""
    return importlib.import_module(f"geoprobe.{name}.experiment").EXPERIMENT


@functools.cache
def experiments() -> dict[str, Experiment]:
    """Every experiment, by command (in the order of :data:`EXPERIMENTS`)."""
    return {e.command: e for e in map(experiment_of_package, EXPERIMENTS)}


def experiment_named(command: str) -> Experiment | None:
    """The experiment whose command is ``command`` (None: no experiment's), importing as few experiment
    packages as it can: the package of that name first, then the others in the order of :data:`EXPERIMENTS`
    (``geoprobe sweep status`` reads a scan sweep without importing the other experiments; issue 39 case 7)."""
    package = command.replace("-", "_")
    for name in sorted(EXPERIMENTS, key=lambda name: name != package):  # stable: the rest keep their order
        e = experiment_of_package(name)
        if e.command == command:
            return e
    return None


def kinds() -> dict[str, type]:
    """Every results kind any experiment writes -> the result class that reads it."""
    return {cls.KIND: cls for e in experiments().values() for cls in e.results}


def __getattr__(name: str) -> Any:  # derived tables, built on first use (importing every experiment)
    if name == "RECIPES":
        return experiments()
    if name == "COMMANDS":
        return tuple(experiments())
    if name == "KINDS":
        return kinds()
    raise AttributeError(f"module 'geoprobe.recipes' has no attribute {name!r}")


def experiment(command_or_config: Any) -> Experiment:
    """The experiment of a command name, a config, or a config class."""
    if isinstance(command_or_config, str):
        return experiments()[command_or_config]
    cls = command_or_config if isinstance(command_or_config, type) else type(command_or_config)
    for e in experiments().values():
        if e.config is cls:
            return e
    names = ", ".join(e.config.__name__ for e in experiments().values())
    raise ArgumentError(f"config is {cls.__name__}, not the config of any experiment ({names}); or pass a recipe path")


# -- recipes ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Probe:
    """A probe recipe as read: its name, command, description, config and file, and ``load``: the loading
    settings of its ``[load]`` table (LoadOptions fields; those not given take the defaults)."""

    name: str
    command: str
    description: str
    config: Any
    path: str
    load: Mapping[str, Any] = field(default_factory=dict)

    @property
    def experiment(self) -> Experiment:
        return experiments()[self.command]


def _load_table(table: Any, exp: Experiment, p: Path) -> dict[str, Any]:
    """A recipe's [load] table: fields of LoadOptions the experiment honours, each of its type."""
    known = {f.name: f for f in load_fields()}
    if not isinstance(table, dict):
        raise ProbeError(f"probe {str(p)!r}: [load] must be a table of {', '.join(known)}")
    for key in table:
        if key not in known:
            raise ProbeError(f"probe {str(p)!r}: unknown key load.{key}; known: {', '.join(known)}")
        if key not in exp.loads:
            raise ProbeError(
                f"probe {str(p)!r}: load.{key} is not used by command {exp.command} (it honours "
                f"{', '.join(exp.loads) or 'no loading setting'}); drop it"
            )
    typed(LoadOptions, dict(table), p, {k: f"load.{k}" for k in table})
    return dict(table)


def load_probe(path: str | os.PathLike) -> Probe:
    """Read a probe recipe; every unknown key is an error naming the file and the key."""
    p = Path(path)
    commands = tuple(experiments())
    if not p.exists() or p.is_dir():
        raise ProbeError(f"probe file {str(p)!r} does not exist; pass a recipe such as probes/scan.toml")
    try:
        raw = read_regular(p, lambda why: ProbeError(f"probe file {str(p)!r} {why}; pass a recipe file"))
    except OSError as exc:
        raise ProbeError(f"probe file {str(p)!r} cannot be read ({exc.strerror}); fix its permissions") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProbeError(f"probe file {str(p)!r} is not valid UTF-8 TOML: {exc}") from None
    head = doc.pop("probe", None)
    if not isinstance(head, dict) or "command" not in head:
        raise ProbeError(
            f"probe {str(p)!r} has no [probe] table naming its command; add [probe] with command = "
            f'"scan" (or one of {", ".join(commands[1:])}) — geoprobe does not guess what to run'
        )
    command = head["command"]
    if command not in commands:
        raise ProbeError(f"probe {str(p)!r} runs command {command!r}; this geoprobe runs: {', '.join(commands)}")
    unknown = sorted(set(head) - {"name", "command", "description"})
    if unknown:
        raise ProbeError(f"probe {str(p)!r}: unknown key probe.{unknown[0]}; known: name, command, description")
    exp = experiments()[command]
    load = _load_table(doc.pop("load"), exp, p) if "load" in doc else {}
    try:
        config = exp.config.from_tables(doc, p)
    except (TypeError, AttributeError) as exc:  # a value of the wrong TOML type reached a comparison
        raise ProbeError(f"probe {str(p)!r}: a setting has the wrong type ({exc}); fix it in the recipe") from None
    return Probe(
        name=head.get("name", p.stem),
        command=command,
        description=head.get("description", ""),
        config=config,
        path=str(p),
        load=load,
    )


def recipe_text(config: Any, load: LoadOptions | None = None, name: str | None = None) -> str:
    """The TOML text of a recipe that :func:`load_probe` reads back as ``config`` (and ``load``: its
    settings that differ from the defaults go into ``[load]``)."""
    exp = experiment(config)
    head = {"command": exp.command, **({"name": name} if name else {})}
    loading = {} if load is None else {f.name: getattr(load, f.name) for f in load_fields()}
    loading = {k: v for k, v in loading.items() if v != LoadOptions.__dataclass_fields__[k].default}
    return dumps({"probe": head, **({"load": loading} if loading else {}), **config.to_tables()})


# -- running --------------------------------------------------------------------------------------------
OUTPUT_KEYS = ("out", "force", "figures")


def run(config_or_recipe: Any, **overrides: Any) -> Any:
    """Run any experiment from Python or Jupyter and write the same files as the command line: a recipe
    path (``probes/*.toml``, the same recipe as ``geoprobe run``) or a config object (``ScanConfig(...)``,
    ``SulaConfig(...)``, …). ``overrides``: settings of the config (``seed=3``, ``n_resamples=200``), the
    loading settings of LoadOptions (``model="pythia-410m"``, ``dtype="bfloat16"``; ``model`` may also
    be a LoadedModel where the experiment takes one), where to write (``out``, ``force``, ``figures``) and
    ``progress`` (a callable ``progress(stage, done, total)``). A setting the experiment does not have
    or does not honour is refused, never ignored. Returns the result."""
    # where to write and how to report, checked before the recipe is read (OutputOptions: out a path,
    # force a bool, figures a string; bool("false") is True, so a string force would replace the run)
    output = OutputOptions(**{k: overrides[k] for k in OUTPUT_KEYS if k in overrides})
    progress = callable_arg(overrides.get("progress"), "progress", "progress(stage, done, total)")
    if isinstance(config_or_recipe, (str, os.PathLike)):
        probe = load_probe(config_or_recipe)
        exp, config, load = probe.experiment, probe.config, dict(probe.load)
    else:
        exp, config, load = experiment(config_or_recipe), config_or_recipe, {}
    rest = {k: v for k, v in overrides.items() if k not in (*OUTPUT_KEYS, "progress")}
    model = rest.pop("model", None)
    if isinstance(model, LoadOptions):
        load.update({f.name: getattr(model, f.name) for f in load_fields()})
    elif model is not None and not is_loaded_model(model):
        load["model"] = name_arg(model, "model", "a model name, LoadOptions or a LoadedModel")
    switches = {f.name for f in load_fields() if f.type in (bool, "bool")}  # trust_remote_code, allow_pickle, …
    for f in load_fields():
        if f.name in rest:
            load[f.name] = bool_arg(rest.pop(f.name), f.name) if f.name in switches else rest.pop(f.name)
    if not is_loaded_model(model):
        model = LoadOptions(**load) if load else None
    config = exp.changed(config, **rest)
    return exp.run(config, model=model, out=output, progress=progress)


# -- results files of any kind ----------------------------------------------------------------
_FIX = "pass a results file that a geoprobe command wrote (results.json, sula.json, …) or its run directory"


def result_class(kind: str) -> type:
    """The result class that reads files of ``kind``."""
    return kinds()[kind]


def result_files() -> tuple[str, ...]:
    """The default results file names, one per kind (``results.json``, ``sula.json``, …)."""
    return tuple(dict.fromkeys(cls.file_name() for cls in kinds().values()))


def find_results(path: str | os.PathLike) -> Path:
    """``path`` itself if it is a file; inside a directory, the one results file it holds
    (a one-line error when there is none or there are several)."""
    p = Path(path)
    if not p.is_dir():
        if not p.exists():
            raise ResultsError(f"results file {str(p)!r} does not exist; {_FIX}")
        return p
    found = [p / name for name in result_files() if (p / name).exists()]  # a FIFO is refused by the reader
    if not found:
        raise ResultsError(f"{str(p)!r} holds no geoprobe results file ({', '.join(result_files())}); {_FIX}")
    if len(found) > 1:
        raise ResultsError(
            f"{str(p)!r} holds several results files ({', '.join(f.name for f in found)}); pass the one to use"
        )
    return found[0]


def load_result(path: str | os.PathLike) -> Any:
    """Read any geoprobe results file (or the one inside a run directory) with its own class."""
    p = find_results(name_arg(path, "path", "a results file or the run directory that holds it"))
    d, source = read_json(p, default_name=None, what="results file", fix=_FIX)
    kind = d.get("kind") if isinstance(d, dict) else None
    if kind not in kinds():
        raise ResultsError(f"{source} is not a geoprobe results file that has a report (kind {kind!r}); {_FIX}")
    return result_class(kind).from_dict(d, source)
