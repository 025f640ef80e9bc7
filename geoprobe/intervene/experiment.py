"""``intervene`` as an experiment: entropy-axis interventions on one model into
``runs/<model>-intervene`` (intervene.json, intervene.html); a run stopped part-way resumes from the
edits whose metrics it kept in ``<run>/intervene.partial``."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from geoprobe.capture.checkpoint import model_fingerprint
from geoprobe.experiment import (
    Experiment,
    OutputOptions,
    Reporter,
    Stages,
    Units,
    load_request,
    model_name,
    model_run_dir,
    open_model,
    run_into,
)
from geoprobe.intervene.config import InterventionConfig
from geoprobe.intervene.result import InterventionResult
from geoprobe.models.options import LoadOptions, load_fields
from geoprobe.rundir import RunOutputs

PARTIAL = "intervene.partial"
OUTPUTS = RunOutputs.of(InterventionResult, partial=PARTIAL)
STAGES = Stages(width=16)


def with_flags(config: InterventionConfig, v: Mapping[str, Any]) -> InterventionConfig:
    """``--layers`` (one experiment editing those layers together), ``--batch-size``, ``--seed``."""
    lay = v.get("layer_spec")
    given = {"experiments": None if lay is None else (lay,), "batch_size": v.get("batch_size"), "seed": v.get("seed")}
    given = {k: val for k, val in given.items() if val is not None}
    return dataclasses.replace(config, **given) if given else config


def execute(config: InterventionConfig, model: Any, output: OutputOptions, reporter: Reporter) -> InterventionResult:
    """Run the interventions on ``model``: intervene.json and intervene.html (default runs/<model>-intervene)."""
    from geoprobe.intervene.run import run_interventions

    target = output.out or model_run_dir(model_name(model), "-intervene")
    request = {"command": "intervene", "load": load_request(model), "config": dataclasses.asdict(config)}

    def compute(run: Any) -> InterventionResult:
        m = open_model(model, reporter)
        if config.experiments is not None:
            from geoprobe.intervene.ops import resolve_layer

            for x in (x for e in config.experiments for x in e):
                resolve_layer(x, m.layout.n_layers)  # names the valid range before any work
        fingerprint = {**model_fingerprint(m), "config": dataclasses.asdict(config)}
        units = Units(target / PARTIAL, fingerprint, "intervene run")
        return run_interventions(m, config, progress=reporter, units=units)

    return run_into(target, OUTPUTS, InterventionResult, request, output, compute, reporter, stages=STAGES)


def tiny() -> tuple[InterventionConfig, LoadOptions]:
    """One layer, two strengths, two controls, few prompts, on a tiny twin."""
    config = InterventionConfig(
        experiments=((1,),), strengths=(0.5, 1.0), n_controls=2, n_per_k=4, n_texts=2, n_resamples=20
    )
    return config, LoadOptions(model="twin:llama-3.2-1b")


EXPERIMENT = Experiment(
    command="intervene",
    config=InterventionConfig,
    results=(InterventionResult,),
    execute=execute,
    tiny=tiny,
    loads=tuple(f.name for f in load_fields()),
    model_given=True,
    flags=frozenset({"layer_spec", "batch_size", "seed"}),
    with_flags=with_flags,
    where="its [intervene] table (geoprobe intervene --help)",
    stages=STAGES,
    resumes="the finished edits in <run>/intervene.partial",
)
