"""``scan`` as an experiment: run into ``runs/<model>`` (capture/, results.json, report.html); a scan
stopped while it captured resumes from the batches kept in ``<run>/capture.partial``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

from geoprobe.capture.checkpoint import PARTIAL_DIR
from geoprobe.experiment import (
    Experiment,
    OutputOptions,
    Reporter,
    Stages,
    load_request,
    model_name,
    model_run_dir,
    open_model,
    run_into,
)
from geoprobe.models.options import LoadOptions, load_fields
from geoprobe.rundir import RunOutputs, check_capture_dir
from geoprobe.scan.config import ScanConfig
from geoprobe.scan.result import ScanResult

OUTPUTS = RunOutputs.of(ScanResult, data={"capture": check_capture_dir}, partial=PARTIAL_DIR)
#: the scan's progress bars: its own stages, and one bar for the analyses (labelled by the current one)
STAGES = Stages({"capture": "capturing", "sampling": "entropy of candidates", "tokenize": "tokenising"}, 14, "analyse")
#: the flags of ``geoprobe run`` a scan recipe honours (besides the loading flags)
SCAN_FLAGS = frozenset(
    {
        "prompts",
        "domain",
        "candidates",
        "per_quintile",
        "min_tokens",
        "max_prompt_tokens",
        "layer_spec",
        "batch_size",
        "max_tokens",
        "scatter_layers",
        "no_init_baseline",
        "init_draws",
        "baseline",
        "null_kind",
        "ci_layers",
        "seed",
    }
)
SAMPLING_FLAGS = frozenset({"candidates", "per_quintile", "min_tokens", "max_prompt_tokens"})


def sampling_changes(v: Mapping[str, Any]) -> dict[str, Any]:
    """The SamplingConfig fields the corpus-sampling flags set (None: not given)."""
    return dict(
        candidates=v.get("candidates"),
        per_stratum=v.get("per_quintile"),
        min_tokens=v.get("min_tokens"),
        max_tokens=v.get("max_prompt_tokens"),
    )


def with_flags(config: ScanConfig, v: Mapping[str, Any]) -> ScanConfig:
    """``config`` changed by the scan flags given (``v``: flag -> parsed value; a list flag as a tuple,
    ``--layers all`` as None; ``prompts`` already reconciled with ``--domain``)."""
    from geoprobe.prompts import prompt_source_kind

    prompts = v.get("prompts")
    if prompts is not None and prompt_source_kind(prompts) == "file":
        prompts = str(Path(prompts))
    return config.updated(
        prompts=prompts,
        layers=v.get("layer_spec"),
        batch_size=v.get("batch_size"),
        max_tokens=v.get("max_tokens"),
        seed=v.get("seed"),
        null_kind=v.get("null_kind"),
        ci_layers=v.get("ci_layers"),
        scatter_layers=v.get("scatter_layers"),
        init_baseline=False if v.get("no_init_baseline") else None,
        init_draws=v.get("init_draws"),
        baseline=v.get("baseline"),
        sampling=sampling_changes(v),
    )


def scan_request(model: Any, config: ScanConfig) -> dict[str, Any]:
    """What fixes a scan's numbers, before the model loads: command, model and loading, settings, and
    the prompt file's contents when the prompts come from a file."""
    from geoprobe.prompts import prompt_source_kind, read_prompts
    from geoprobe.provenance import prompts_hash

    from_file = prompt_source_kind(config.prompts) == "file"
    return {
        "command": "scan",
        "load": load_request(model),
        "config": config.to_dict(),
        "prompts_sha256": prompts_hash(read_prompts(config.prompts)) if from_file else None,
    }


def execute(
    config: ScanConfig, model: Any, output: OutputOptions, reporter: Reporter, *, capture_with: Any = None
) -> ScanResult:
    """Scan ``model`` with ``config`` into ``output.out`` (default runs/<model>): capture/, results.json,
    report.html (and figures); resumes a stopped scan, finishes one stopped between its writes.
    ``capture_with``: a capture function to use instead of capturing here (``geoprobe scan --executor ray``:
    a DataParallel's, geoprobe.capture.parallel)."""
    from geoprobe.prompts import prompts_read_line
    from geoprobe.scan.run import check_prompts, scan

    target = output.out or model_run_dir(model_name(model))
    read = check_prompts(config)  # bad prompts fail before the model loads
    if read is not None:
        reporter.say(prompts_read_line(config.prompts, read), soft_wrap=True)
    partial = target / PARTIAL_DIR

    def on_resume(loaded: int, total: int, where: Path) -> None:
        reporter.note(f"resuming: {loaded} of {total} batches already captured in {where}")

    def compute(run: Any) -> ScanResult:
        m = open_model(model, reporter)
        result, cap = scan(
            m,
            None,
            config,
            progress=reporter,
            return_capture=True,
            checkpoint_dir=partial,
            on_resume=on_resume,
            capture_with=capture_with,
        )
        cap.save(target / "capture", overwrite=True)  # checked when the run directory was claimed
        return dataclasses.replace(result, capture_dir="capture")

    request = scan_request(model, config)
    return run_into(target, OUTPUTS, ScanResult, request, output, compute, reporter, stages=STAGES)


def tiny() -> tuple[ScanConfig, LoadOptions]:
    """The builtin prompts on a tiny twin, with few resamples."""
    config = ScanConfig(prompts="builtin", batch_size=40, n_resamples=20, pca_resamples=10, null_draws=10)
    return dataclasses.replace(config, n_permutations=20), LoadOptions(model="twin:llama-3.2-1b")


EXPERIMENT = Experiment(
    command="scan",
    config=ScanConfig,
    results=(ScanResult,),
    execute=execute,
    tiny=tiny,
    loads=tuple(f.name for f in load_fields()),
    model_given=True,
    flags=SCAN_FLAGS,
    with_flags=with_flags,
    where="its [prompts], [capture], [analyses] tables",
    stages=STAGES,
    resumes="the finished capture batches in <run>/capture.partial",
)
