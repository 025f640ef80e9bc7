"""``sula`` as an experiment: the SULA task on one model into ``runs/<model>-sula`` (sula.json,
sula.html); a run stopped part-way resumes from the conditions whose label probabilities and values it
kept in ``<run>/sula.partial``."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from geoprobe.capture.checkpoint import model_fingerprint
from geoprobe.experiment import (
    Experiment,
    OutputOptions,
    Reporter,
    Units,
    load_request,
    model_name,
    model_run_dir,
    open_model,
    run_into,
)
from geoprobe.models.options import LoadOptions, load_fields
from geoprobe.rundir import RunOutputs
from geoprobe.sula.config import SulaConfig
from geoprobe.sula.result import SulaResult

PARTIAL = "sula.partial"
OUTPUTS = RunOutputs.of(SulaResult, partial=PARTIAL)


def with_flags(config: SulaConfig, v: Mapping[str, Any]) -> SulaConfig:
    given = {k: v[k] for k in ("batch_size", "seed") if v.get(k) is not None}
    return dataclasses.replace(config, **given) if given else config


def settings(config: SulaConfig) -> dict[str, Any]:
    """The config as a run records it (the layer beside it, as before it was a setting)."""
    return {k: v for k, v in dataclasses.asdict(config).items() if k != "layer"}


def execute(config: SulaConfig, model: Any, output: OutputOptions, reporter: Reporter) -> SulaResult:
    """Run SULA on ``model``: sula.json and sula.html in the run directory (default runs/<model>-sula)."""
    from geoprobe.sula.run import run_sula

    target = output.out or model_run_dir(model_name(model), "-sula")
    request = {"command": "sula", "load": load_request(model), "config": settings(config), "layer": config.layer}

    def compute(run: Any) -> SulaResult:
        m = open_model(model, reporter)
        fingerprint = {**model_fingerprint(m), "config": settings(config), "layer": config.layer}
        units = Units(target / PARTIAL, fingerprint, "sula run")
        return run_sula(m, config, progress=reporter, units=units)

    return run_into(target, OUTPUTS, SulaResult, request, output, compute, reporter)


def tiny() -> tuple[SulaConfig, LoadOptions]:
    """Three values of k, four prompts each, on a tiny twin (every prompt scored)."""
    config = SulaConfig(k_values=(0, 1, 2), n_per_k=4, n_resamples=20, min_label_mass=0.0, batch_size=4)
    return config, LoadOptions(model="twin:llama-3.2-1b")


EXPERIMENT = Experiment(
    command="sula",
    config=SulaConfig,
    results=(SulaResult,),
    execute=execute,
    tiny=tiny,
    loads=tuple(f.name for f in load_fields()),
    model_given=True,
    flags=frozenset({"batch_size", "seed"}),
    with_flags=with_flags,
    where="its [sula] table (geoprobe sula --help)",
    resumes="the finished conditions in <run>/sula.partial",
)
