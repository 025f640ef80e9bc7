"""The experiment registry: every command geoprobe runs, written down once.

One :class:`Recipe` per command names its config class, its run function (the Python entry
point), the results kinds its files hold with their classes, and how a probe recipe's TOML
tables become its config. :func:`load_probe` (``geoprobe run``, notebooks), the CLI's ``run``
and ``report`` commands and :func:`load_result` read this table; nothing else dispatches on a
command's name. Classes are named as ``"module:attr"`` strings and imported when first used, so
``import geoprobe.recipes`` stays cheap.

Adding an experiment: its package (``config.py``, ``run.py``, ``result.py``, ``report.py``),
then one entry in :data:`RECIPES` (docs/architecture.md).
"""

from __future__ import annotations

import importlib
import os
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable

from geoprobe.checks import check_fields, check_limits, name_arg
from geoprobe.errors import GeoprobeError, ResultsError
from geoprobe.paths import read_json, read_regular
from geoprobe.sampling import SamplingConfig, is_corpus_set
from geoprobe.scan.config import ProbeError, ScanConfig, sampling_config

__all__ = [
    "RECIPES",
    "KINDS",
    "Probe",
    "Recipe",
    "find_results",
    "load_probe",
    "load_result",
    "resolve",
    "result_class",
    "result_files",
]


def resolve(ref: str) -> Any:
    """The object a ``"module:attr"`` reference names."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Recipe:
    """One command: ``config`` / ``run`` as ``"module:attr"``; ``results``: results kind ->
    ``"module:Class"``; ``parse(tables, recipe path, config class)`` builds the config from the
    recipe's tables; ``where`` says in which tables its settings live (for error messages)."""

    command: str
    config: str
    run: str
    results: dict[str, str]
    parse: Callable[[dict[str, Any], Path, type], Any]
    where: str

    def config_class(self) -> type:
        return resolve(self.config)

    def run_function(self) -> Callable[..., Any]:
        return resolve(self.run)


@dataclass(frozen=True)
class Probe:
    """A probe recipe as read: its name, command, description, config and file."""

    name: str
    command: str
    description: str
    config: Any
    path: str


# -- how recipe tables become configs ----------------------------------------------------------
_SECTIONS = {  # TOML table -> the ScanConfig fields it may set
    "prompts": {"set": "prompts", "file": "prompts"},
    "capture": {"layers": "layers", "batch_size": "batch_size", "max_tokens": "max_tokens"},
    "analyses": {
        "run": "analyses",
        "n_resamples": "n_resamples",
        "pca_resamples": "pca_resamples",
        "null_draws": "null_draws",
        "null_kind": "null_kind",
        "n_permutations": "n_permutations",
        "confidence": "confidence",
        "init_baseline": "init_baseline",
        "seed": "seed",
        "ci_layers": "ci_layers",
    },
    "figures": {"scatter_layers": "scatter_layers"},
    "sampling": {
        "candidates": "candidates",
        "per_quintile": "per_stratum",
        "n_strata": "n_strata",
        "min_tokens": "min_tokens",
        "max_tokens": "max_prompt_tokens",
        "batch_size": "sampling_batch_size",
    },
}
_RENAMED = {"max_prompt_tokens": "max_tokens", "sampling_batch_size": "batch_size"}
_DOMAIN_SECTIONS = {  # TOML table -> DomainsConfig fields ("sampling." for SamplingConfig fields)
    "domains": {
        "run": "domains",
        "layer": "layer",
        "domain_candidates": "domain_candidates",
        "controls": "controls",
        "batch_size": "batch_size",
    },
    "sampling": {
        "candidates": "sampling.candidates",
        "per_quintile": "sampling.per_stratum",
        "n_strata": "sampling.n_strata",
        "min_tokens": "sampling.min_tokens",
        "max_tokens": "sampling.max_tokens",
        "batch_size": "sampling.batch_size",
    },
    "analyses": {
        "n_resamples": "n_resamples",
        "n_permutations": "n_permutations",
        "null_draws": "null_draws",
        "confidence": "confidence",
        "seed": "seed",
    },
}


def _entries(doc: dict[str, Any], sections: dict[str, dict[str, str]], p: Path) -> Any:
    """(section, key, field, value) of every recipe entry; an unknown section or key is a
    one-line ProbeError naming the file and what is known."""
    for section, table in doc.items():
        allowed = sections.get(section)
        if allowed is None or not isinstance(table, dict):
            raise ProbeError(f"probe {str(p)!r}: unknown section [{section}]; known: {', '.join(sections)}")
        for key, value in table.items():
            if key not in allowed:
                raise ProbeError(f"probe {str(p)!r}: unknown key {section}.{key}; known: {', '.join(allowed)}")
            yield section, key, allowed[key], value


def _typed(cls: type, values: dict[str, Any], p: Path, keys: dict[str, str]) -> None:
    """Each recipe value fits its config field's type and stays within the field's upper limit (the
    class's ``LIMITS``), or a one-line ProbeError naming ``section.key``."""
    try:
        check_fields(cls, values, lambda f: f"probe {str(p)!r}: {keys.get(f, f)}")
    except GeoprobeError as exc:
        raise ProbeError(f"{exc}; fix it in the recipe") from None
    try:
        check_limits(values, getattr(cls, "LIMITS", {}), lambda f: keys.get(f, f))
    except GeoprobeError as exc:
        raise ProbeError(f"probe {str(p)!r}: {exc} in the recipe") from None


def _is_set(name: str) -> bool:
    return name == "builtin" or is_corpus_set(name)


def scan_tables(doc: dict[str, Any], p: Path, cls: type = ScanConfig) -> ScanConfig:
    """A scan recipe's [prompts], [capture], [analyses], [figures], [sampling] tables."""
    prompts = doc.get("prompts")
    if isinstance(prompts, dict) and {"set", "file"} <= prompts.keys():
        raise ProbeError(f"probe {str(p)!r}: [prompts] has both set and file; keep one of them")
    settings: dict[str, Any] = {}
    keys: dict[str, str] = {}
    for section, key, field_name, value in _entries(doc, _SECTIONS, p):
        keys[field_name] = f"{section}.{key}"
        if section == "prompts" and key == "file" and isinstance(value, str):
            value = str((p.parent / value).resolve()) if not Path(value).is_absolute() else value
        if section == "prompts" and key == "set" and isinstance(value, str) and not _is_set(value):
            raise ProbeError(
                f"probe {str(p)!r}: prompts.set = {value!r} is not a prompt set (builtin, mixed or a domain: "
                "geoprobe prompts lists them); name a prompt file with [prompts] file = ..., which is read "
                "relative to the recipe"
            )
        if key == "layers" and value == "all":
            value = None
        settings[field_name] = value
    sampling = {
        _RENAMED.get(k, k): settings.pop(k)
        for k in list(settings)
        if k in ("candidates", "per_stratum", "n_strata", "min_tokens", "max_prompt_tokens", "sampling_batch_size")
    }
    _typed(cls, settings, p, keys)
    _typed(SamplingConfig, sampling, p, {_RENAMED.get(k, k): v for k, v in keys.items()})
    if sampling:
        settings["sampling"] = sampling
    return cls.from_dict(settings)


def flat_tables(command: str) -> Callable[[dict[str, Any], Path, type], Any]:
    """A recipe whose ``[<command>]`` table (and ``[analyses]`` for n_resamples and seed) holds
    fields of the command's config class, one key per field."""

    def parse(doc: dict[str, Any], p: Path, cls: type) -> Any:
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        keys: dict[str, str] = {}
        for section, table in doc.items():
            if section not in (command, "analyses") or not isinstance(table, dict):
                raise ProbeError(f"probe {str(p)!r}: unknown section [{section}]; known: {command}, analyses")
            for key, value in table.items():
                if key not in known:
                    raise ProbeError(
                        f"probe {str(p)!r}: unknown key {section}.{key}; known: {', '.join(sorted(known))}"
                    )
                keys[key] = f"{section}.{key}"
                values[key] = (
                    tuple(tuple(v) if isinstance(v, list) else v for v in value) if isinstance(value, list) else value
                )
        _typed(cls, values, p, keys)
        return cls(**values)

    return parse


def domain_tables(doc: dict[str, Any], p: Path, cls: type) -> Any:
    """A compare-domains recipe's [domains], [sampling] and [analyses] tables."""
    top: dict[str, Any] = {}
    sampling: dict[str, Any] = {}
    keys: dict[str, str] = {}
    for section, key, field_name, value in _entries(doc, _DOMAIN_SECTIONS, p):
        keys[field_name.removeprefix("sampling.")] = f"{section}.{key}"
        if field_name.startswith("sampling."):
            sampling[field_name.removeprefix("sampling.")] = value
        elif field_name == "domains":
            top["domains"] = None if value == "all" else value
        else:
            top[field_name] = value
    _typed(cls, top, p, keys)
    _typed(SamplingConfig, sampling, p, keys)
    if top.get("domains") is not None:
        top["domains"] = tuple(top["domains"])
    return cls(sampling=sampling_config({**asdict(SamplingConfig()), **sampling}), **top)


def model_tables(doc: dict[str, Any], p: Path, cls: type) -> Any:
    """A compare-models recipe: its [models] table (run, sets, sample_with) and a scan's tables."""
    table = doc.pop("models", None)
    if "prompts" in doc:  # the prompts are sampled per set: a [prompts] table would be ignored
        raise ProbeError(
            f"probe {str(p)!r} runs compare-models, which samples its prompts from [models] sets; drop its "
            "[prompts] table (or run each model's scan with that prompt file and geoprobe compare the runs)"
        )
    scan = scan_tables(doc, p)
    if not isinstance(table, dict) or "run" not in table:
        raise ProbeError(f"probe {str(p)!r} runs compare-models but has no [models] run = [...] list")
    unknown = sorted(set(table) - {"run", "sets", "sample_with"})
    if unknown:
        raise ProbeError(f"probe {str(p)!r}: unknown key models.{unknown[0]}; known: run, sets, sample_with")
    _typed(
        cls,
        {"models": table["run"], **{k: table[k] for k in ("sets", "sample_with") if k in table}},
        p,
        {"models": "models.run", "sets": "models.sets", "sample_with": "models.sample_with"},
    )
    return cls(
        models=tuple(table["run"]),
        sets=tuple(table.get("sets", ("mixed",))),
        sample_with=table.get("sample_with"),
        scan=scan,
    )


# -- the registry ---------------------------------------------------------------------------
RECIPES: dict[str, Recipe] = {
    r.command: r
    for r in (
        Recipe(
            "scan",
            "geoprobe.scan.config:ScanConfig",
            "geoprobe.scan.run:scan",
            {"geoprobe.scan": "geoprobe.scan.result:ScanResult"},
            scan_tables,
            "its [prompts], [capture], [analyses] tables",
        ),
        Recipe(
            "compare-domains",
            "geoprobe.domains.config:DomainsConfig",
            "geoprobe.domains.run:compare_domains_run",
            {"geoprobe.domains": "geoprobe.domains.result:DomainComparison"},
            domain_tables,
            "its [domains], [sampling], [analyses] tables",
        ),
        Recipe(
            "compare-models",
            "geoprobe.compare.config:CompareModelsConfig",
            "geoprobe.compare.run:compare_results",
            {"geoprobe.compare": "geoprobe.compare.result:ModelComparison"},
            model_tables,
            "its [models] table (run, sets, sample_with)",
        ),
        Recipe(
            "sula",
            "geoprobe.sula.config:SulaConfig",
            "geoprobe.sula.run:run_sula",
            {"geoprobe.sula": "geoprobe.sula.result:SulaResult"},
            flat_tables("sula"),
            "its [sula] table (geoprobe sula --help)",
        ),
        Recipe(
            "intervene",
            "geoprobe.intervene.config:InterventionConfig",
            "geoprobe.intervene.run:run_interventions",
            {"geoprobe.intervene": "geoprobe.intervene.result:InterventionResult"},
            flat_tables("intervene"),
            "its [intervene] table (geoprobe intervene --help)",
        ),
        Recipe(
            "windtunnel",
            "geoprobe.windtunnel.config:WindTunnelConfig",
            "geoprobe.windtunnel.run:train_tunnel",
            {
                "geoprobe.windtunnel": "geoprobe.windtunnel.result:WindTunnelResult",
                "geoprobe.windtunnel.seeds": "geoprobe.windtunnel.seeds:TunnelSeeds",
            },
            flat_tables("windtunnel"),
            "its [windtunnel] table (geoprobe windtunnel run --help)",
        ),
        Recipe(
            "denoise",
            "geoprobe.denoise.config:DenoiseConfig",
            "geoprobe.denoise.run:run_denoise",
            {"geoprobe.denoise": "geoprobe.denoise.result:DenoiseResult"},
            flat_tables("denoise"),
            "its [denoise] table (geoprobe denoise --help)",
        ),
        Recipe(
            "positional",
            "geoprobe.positional.config:PositionalConfig",
            "geoprobe.positional.run:run_positional",
            {
                "geoprobe.positional": "geoprobe.positional.result:PositionalResult",
                "geoprobe.positional.windtunnel": "geoprobe.positional.result:TunnelLengthCurve",
            },
            flat_tables("positional"),
            "its [positional] table (geoprobe positional --help)",
        ),
        Recipe(
            "dynamics",
            "geoprobe.dynamics.config:DynamicsConfig",
            "geoprobe.dynamics.run:run_dynamics",
            {"geoprobe.dynamics": "geoprobe.dynamics.result:DynamicsResult"},
            flat_tables("dynamics"),
            "its [dynamics] table (geoprobe dynamics --help)",
        ),
        Recipe(
            "trajectory",
            "geoprobe.trajectory.config:TrajectoryConfig",
            "geoprobe.trajectory.train:train_trajectory",
            {"geoprobe.trajectory": "geoprobe.trajectory.result:TrajectoryResult"},
            flat_tables("trajectory"),
            "its [trajectory] table (geoprobe trajectory --help)",
        ),
    )
}
COMMANDS: tuple[str, ...] = tuple(RECIPES)
#: results kind -> "module:Class" of the result class that reads it
KINDS: dict[str, str] = {kind: ref for r in RECIPES.values() for kind, ref in r.results.items()}


def load_probe(path: str | os.PathLike) -> Probe:
    """Read a probe recipe; every unknown key is an error naming the file and the key."""
    p = Path(path)
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
            f'"scan" (or one of {", ".join(COMMANDS[1:])}) — geoprobe does not guess what to run'
        )
    command = head["command"]
    if command not in RECIPES:
        raise ProbeError(f"probe {str(p)!r} runs command {command!r}; this geoprobe runs: {', '.join(COMMANDS)}")
    unknown = sorted(set(head) - {"name", "command", "description"})
    if unknown:
        raise ProbeError(f"probe {str(p)!r}: unknown key probe.{unknown[0]}; known: name, command, description")
    entry = RECIPES[command]
    try:
        config = entry.parse(doc, p, entry.config_class())
    except (TypeError, AttributeError) as exc:  # a value of the wrong TOML type reached a comparison
        raise ProbeError(f"probe {str(p)!r}: a setting has the wrong type ({exc}); fix it in the recipe") from None
    return Probe(
        name=head.get("name", p.stem),
        command=command,
        description=head.get("description", ""),
        config=config,
        path=str(p),
    )


# -- results files of any kind ----------------------------------------------------------------
_FIX = "pass a results file that a geoprobe command wrote (results.json, sula.json, …) or its run directory"


def result_class(kind: str) -> type:
    """The result class that reads files of ``kind``."""
    return resolve(KINDS[kind])


def result_files() -> tuple[str, ...]:
    """The default results file names, one per kind (``results.json``, ``sula.json``, …)."""
    return tuple(dict.fromkeys(result_class(k).file_name() for k in KINDS))


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
    if kind not in KINDS:
        raise ResultsError(f"{source} is not a geoprobe results file that has a report (kind {kind!r}); {_FIX}")
    return result_class(kind).from_dict(d, source)
