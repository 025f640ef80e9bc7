"""``geoprobe run RECIPE``: run a probe recipe (probes/*.toml); flags override the recipe's settings.

Every flag ``run`` accepts is either honoured by the recipe's experiment or refused in one line naming
the recipe: each experiment (geoprobe.recipes) says which flags it honours (its loading settings and
``flags``) and how they change its config (``with_flags``); a flag outside that set never reaches a run
that would ignore it. The loading flags are LoadOptions' own (geoprobe.models.loading)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from geoprobe.cli.app import app
from geoprobe.cli.common import launch
from geoprobe.cli.options import LOAD_UNCHECKED, OUTPUT, LayersOpt, OptionalSeedOpt, OutputOptions, takes
from geoprobe.cli.scan import (
    BaselineOpt,
    CandidatesOpt,
    CiOpt,
    DomainOpt,
    InitDrawsOpt,
    MaxTokensOpt,
    MaxTokOpt,
    MinTokOpt,
    NoInitOpt,
    NullOpt,
    OptionalBatchOpt,
    PerQuintileOpt,
    PromptsOpt,
    ScatterOpt,
    parsed_flags,
)
from geoprobe.errors import GeoprobeError
from geoprobe.models.options import LoadOptions, load_fields

#: the flags of ``geoprobe run`` besides the loading flags, by parameter name (the output flags --out,
#: --force, --figures apply to every recipe)
RUN_FLAGS: dict[str, str] = {
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
    "init_draws": "--init-draws",
    "baseline": "--baseline",
    "null_kind": "--null",
    "ci_layers": "--ci-layers",
    "seed": "--seed",
}
#: every flag of ``geoprobe run`` by parameter name
FLAGS: dict[str, str] = {**{f.name: f.metadata["flag"] for f in load_fields()}, **RUN_FLAGS}


def honours(experiment: Any) -> frozenset[str]:
    """The flags of ``geoprobe run`` a recipe of ``experiment`` honours: its loading settings and its flags."""
    return frozenset(experiment.loads) | frozenset(experiment.flags)


def check_flags(probe: Any, given: frozenset[str]) -> None:
    """A one-line error for the first given flag that ``probe``'s command does not use."""
    unused = [FLAGS[n] for n in FLAGS if n in given and n not in honours(probe.experiment)]
    if unused:
        raise GeoprobeError(
            f"{unused[0]} is not used by recipe {probe.path!r} (command {probe.command}); drop it, or "
            f"set what you meant in {probe.experiment.where}"
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
    init_draws: Optional[int] = InitDrawsOpt,
    baseline: Optional[str] = BaselineOpt,
    null_kind: Optional[str] = NullOpt,
    ci_layers: Optional[str] = CiOpt,
    seed: Optional[int] = OptionalSeedOpt,
) -> None:
    """Run a probe recipe (probes/*.toml); flags override the recipe's settings (a flag the recipe's
    command does not use is refused)."""
    from geoprobe.recipes import load_probe

    probe = load_probe(probe_file)
    check_flags(probe, given)
    exp = probe.experiment
    values = {n: v for n, v in locals().items() if n in RUN_FLAGS and n in given}
    config = exp.with_flags(probe.config, parsed_flags(values)) if values else probe.config
    loading = {**probe.load, **{n: getattr(load, n) for n in exp.loads if n in given}}
    model = LoadOptions(**loading) if exp.loads else None
    if "model" in exp.loads:
        model.check()  # compare-models checks the loading flags against each of its models
    launch(exp, config, model, output)
