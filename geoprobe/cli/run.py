"""``geoprobe run RECIPE``: run a probe recipe (probes/*.toml); flags override the recipe's settings.

Every flag ``run`` accepts is either honoured by the recipe's command or refused in one line naming
the recipe: :data:`RUNNERS` says, per command of :data:`geoprobe.recipes.RECIPES`, which flags it takes
and how they change its config; a flag outside that set never reaches a run that would ignore it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import typer

from geoprobe.cli.app import app
from geoprobe.cli.options import LOAD_UNCHECKED, OUTPUT, LayersOpt, OptionalSeedOpt, OutputOptions, layers, takes
from geoprobe.cli.scan import (
    CandidatesOpt,
    CiOpt,
    DomainOpt,
    MaxTokensOpt,
    MaxTokOpt,
    MinTokOpt,
    NoInitOpt,
    NullOpt,
    OptionalBatchOpt,
    PerQuintileOpt,
    PromptsOpt,
    ScatterOpt,
    prompt_choice,
    sampling_changes,
    scan_changes,
)
from geoprobe.errors import GeoprobeError
from geoprobe.models.loading import LoadOptions
from geoprobe.recipes import RECIPES, load_probe

#: every flag of ``geoprobe run`` by parameter name (the output flags --out, --force, --figures apply to every recipe)
FLAGS: dict[str, str] = {
    "model": "--model",
    "revision": "--revision",
    "dtype": "--dtype",
    "device": "--device",
    "device_map": "--device-map",
    "trust_remote_code": "--trust-remote-code",
    "allow_pickle": "--allow-pickle",
    "prompts": "--prompts",
    "domain": "--domain",
    "candidates": "--candidates",
    "per_quintile": "--per-quintile",
    "min_tokens": "--min-tokens",
    "max_prompt_tokens": "--max-prompt-tokens",
    "layer_spec": "--layers",
    "batch_size": "--batch-size",
    "max_tokens": "--max-tokens",
    "scatter_layers": "--scatter-layers",
    "no_init_baseline": "--no-init-baseline",
    "null_kind": "--null",
    "ci_layers": "--ci-layers",
    "seed": "--seed",
}
_LOAD = frozenset({"model", "revision", "dtype", "device", "device_map", "trust_remote_code", "allow_pickle"})
_SAMPLING = frozenset({"candidates", "per_quintile", "min_tokens", "max_prompt_tokens"})
_SCAN = frozenset(FLAGS) - _LOAD


@dataclass(frozen=True)
class Runner:
    """What ``geoprobe run`` does with a recipe of one command (:data:`geoprobe.recipes.RECIPES`):
    the flags it honours and ``execute(config, values, load, output)`` (values: the given flags)."""

    honours: frozenset[str]
    execute: Callable[[Any, Mapping[str, Any], LoadOptions, OutputOptions], Any]


def _scan(config: Any, v: Mapping[str, Any], load: LoadOptions, output: OutputOptions) -> Any:
    from geoprobe.cli.scan import execute_scan

    config = config.updated(
        **scan_changes(
            prompt_choice(v.get("prompts"), v.get("domain")),
            v.get("layer_spec"),
            v.get("batch_size"),
            v.get("max_tokens"),
            v.get("seed"),
            v.get("scatter_layers"),
            bool(v.get("no_init_baseline")),
            v.get("null_kind"),
            v.get("ci_layers"),
            _sampling(v),
        )
    )
    return execute_scan(load, config, output)


def _sampling(v: Mapping[str, Any]) -> dict[str, Any]:
    return sampling_changes(v.get("candidates"), v.get("per_quintile"), v.get("min_tokens"), v.get("max_prompt_tokens"))


def _changed(config: Any, **changes: Any) -> Any:
    """``config`` with the given (not None) fields replaced; the config's own checks run again."""
    given = {k: val for k, val in changes.items() if val is not None}
    return dataclasses.replace(config, **given) if given else config


def _domains(config: Any, v: Mapping[str, Any], load: LoadOptions, output: OutputOptions) -> Any:
    from geoprobe.cli.corpus import execute_domains
    from geoprobe.sampling import SamplingConfig

    sampling = {k: val for k, val in _sampling(v).items() if val is not None}
    if sampling:
        config = dataclasses.replace(
            config, sampling=SamplingConfig(**{**dataclasses.asdict(config.sampling), **sampling})
        )
    return execute_domains(load, _changed(config, batch_size=v.get("batch_size"), seed=v.get("seed")), output)


def _compare_models(config: Any, v: Mapping[str, Any], load: LoadOptions, output: OutputOptions) -> Any:
    from geoprobe.cli.corpus import execute_compare_models

    for model in config.models:
        dataclasses.replace(load, model=model).check()
    scan = config.scan.updated(
        **scan_changes(
            None,
            v.get("layer_spec"),
            v.get("batch_size"),
            v.get("max_tokens"),
            v.get("seed"),
            v.get("scatter_layers"),
            bool(v.get("no_init_baseline")),
            v.get("null_kind"),
            v.get("ci_layers"),
            _sampling(v),
        )
    )
    return execute_compare_models(dataclasses.replace(config, scan=scan), load, output)


def _sula(config: Any, v: Mapping[str, Any], load: LoadOptions, output: OutputOptions) -> Any:
    from geoprobe.cli.sula import execute_sula

    return execute_sula(load, _changed(config, batch_size=v.get("batch_size"), seed=v.get("seed")), output)


def _intervene(config: Any, v: Mapping[str, Any], load: LoadOptions, output: OutputOptions) -> Any:
    from geoprobe.cli.sula import execute_intervene

    lay = layers(v.get("layer_spec"))
    config = _changed(
        config, experiments=None if lay is None else (lay,), batch_size=v.get("batch_size"), seed=v.get("seed")
    )
    return execute_intervene(load, config, output)


def _positional(config: Any, v: Mapping[str, Any], load: LoadOptions, output: OutputOptions) -> Any:
    from geoprobe.cli.positional import execute_positional

    config = _changed(config, layers=layers(v.get("layer_spec")), batch_size=v.get("batch_size"), seed=v.get("seed"))
    return execute_positional(load, config, output)


def _windtunnel(config: Any, v: Mapping[str, Any], load: LoadOptions, output: OutputOptions) -> Any:
    from geoprobe.cli.windtunnel import execute_tunnel

    return execute_tunnel(_changed(config, seed=v.get("seed")), output, device=load.device)


def _denoise(config: Any, v: Mapping[str, Any], load: LoadOptions, output: OutputOptions) -> Any:
    from geoprobe.cli.denoise import execute_denoise

    return execute_denoise(_changed(config, seed=v.get("seed"), batch_size=v.get("batch_size")), output)


def _dynamics(config: Any, v: Mapping[str, Any], load: LoadOptions, output: OutputOptions) -> Any:
    from geoprobe.cli.dynamics import execute_dynamics

    return execute_dynamics(_changed(config, seed=v.get("seed")), output)


def _trajectory(config: Any, v: Mapping[str, Any], load: LoadOptions, output: OutputOptions) -> Any:
    from geoprobe.cli.trajectory import execute_trajectory

    return execute_trajectory(_changed(config, seed=v.get("seed")), output)


#: per command of the registry: the flags it honours and how it runs
RUNNERS: dict[str, Runner] = {
    "scan": Runner(_LOAD | _SCAN, _scan),
    "compare-domains": Runner(_LOAD | _SAMPLING | {"batch_size", "seed"}, _domains),
    "compare-models": Runner((_LOAD - {"model", "revision"}) | (_SCAN - {"prompts", "domain"}), _compare_models),
    "sula": Runner(_LOAD | {"batch_size", "seed"}, _sula),
    "intervene": Runner(_LOAD | {"layer_spec", "batch_size", "seed"}, _intervene),
    "positional": Runner(_LOAD | {"layer_spec", "batch_size", "seed"}, _positional),
    "windtunnel": Runner(frozenset({"device", "seed"}), _windtunnel),
    "denoise": Runner(frozenset({"batch_size", "seed"}), _denoise),
    "dynamics": Runner(frozenset({"seed"}), _dynamics),
    "trajectory": Runner(frozenset({"seed"}), _trajectory),
}


def check_flags(probe: Any, given: frozenset[str]) -> None:
    """A one-line error for the first given flag that ``probe``'s command does not use."""
    unused = [FLAGS[n] for n in FLAGS if n in given and n not in RUNNERS[probe.command].honours]
    if unused:
        raise GeoprobeError(
            f"{unused[0]} is not used by recipe {probe.path!r} (command {probe.command}); drop it, or "
            f"set what you meant in {RECIPES[probe.command].where}"
        )


@app.command(name="run")
@takes(LOAD_UNCHECKED, OUTPUT)
def run_probe(
    load: LoadOptions,
    output: OutputOptions,
    given: frozenset,
    probe_file: Path = typer.Argument(..., help="a probe recipe, e.g. probes/scan.toml"),
    prompts: Optional[str] = PromptsOpt,
    domain: Optional[str] = DomainOpt,
    candidates: Optional[int] = CandidatesOpt,
    per_quintile: Optional[int] = PerQuintileOpt,
    min_tokens: Optional[int] = MinTokOpt,
    max_prompt_tokens: Optional[int] = MaxTokOpt,
    layer_spec: Optional[str] = LayersOpt,
    batch_size: Optional[int] = OptionalBatchOpt,
    max_tokens: Optional[int] = MaxTokensOpt,
    scatter_layers: Optional[str] = ScatterOpt,
    no_init_baseline: bool = NoInitOpt,
    null_kind: Optional[str] = NullOpt,
    ci_layers: Optional[str] = CiOpt,
    seed: Optional[int] = OptionalSeedOpt,
) -> None:
    """Run a probe recipe (probes/*.toml); flags override the recipe's settings (a flag the recipe's
    command does not use is refused)."""
    probe = load_probe(probe_file)
    check_flags(probe, given)
    if "model" in RUNNERS[probe.command].honours:
        load.check()  # compare-models checks the loading flags against each of its models
    values = {n: v for n, v in locals().items() if n in FLAGS and n in given}
    RUNNERS[probe.command].execute(probe.config, values, load, output)
