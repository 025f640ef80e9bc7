"""``compare-models`` as an experiment: sample every prompt set once, scan each model on exactly those
prompts, compare the scans (``runs/compare-models``: prompts-SET.jsonl, one scan run per model and set,
comparison.json, compare.html); and :func:`compare_into`, ``geoprobe compare`` of scans already run.

A compare-models run stopped part-way resumes: its settings are kept in ``<run>/compare-models.partial``
while it runs, and the same run again reuses the prompt files written and the scans finished (a scan
stopped mid-way resumes its own capture)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

from geoprobe.compare.config import CompareModelsConfig
from geoprobe.compare.result import ModelComparison
from geoprobe.errors import GeoprobeError, OutputExistsError
from geoprobe.experiment import Experiment, OutputOptions, Reporter, Units, check_figures, model_run_dir, run_into
from geoprobe.experiment.runner import discard_partial, finished, open_model
from geoprobe.kinds import PAGE_KIND, PROMPTS_KIND
from geoprobe.models.options import LoadOptions, load_fields
from geoprobe.rundir import RunOutputs
from geoprobe.scan.config import ScanConfig
from geoprobe.scan.experiment import SCAN_FLAGS, scan_request
from geoprobe.scan.experiment import execute as execute_scan
from geoprobe.scan.experiment import with_flags as scan_with_flags
from geoprobe.scan.result import ScanResult

OUTPUTS = RunOutputs.of(ModelComparison)
PARTIAL = "compare-models.partial"


def _digest(path: Path) -> str:
    from geoprobe.paths import read_regular

    p = path / "results.json" if path.is_dir() else path
    try:  # a FIFO is not waited on: compare_results then refuses it in one line
        return hashlib.sha256(read_regular(p, lambda why: OSError(why))).hexdigest()
    except OSError:
        return "unreadable"


def compare_into(
    results: Sequence[str | os.PathLike], layer: int, output: OutputOptions, reporter: Reporter
) -> ModelComparison:
    """``geoprobe compare``: comparison.json and compare.html of the scans ``results`` in ``output.out``
    (default runs/compare). Warnings raised while comparing reach ``reporter.warn`` as they arise."""
    from geoprobe.compare.run import compare_results

    paths = [Path(p) for p in results]
    target = output.out or Path("runs") / "compare"
    request = {"command": "compare", "layer": layer, "inputs": [[str(p), _digest(p)] for p in paths]}

    def compute(run: Any) -> ModelComparison:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            comparison = compare_results(paths, layer=layer)
        for w in caught:
            reporter.warn(str(w.message))
        return comparison

    return run_into(target, OUTPUTS, ModelComparison, request, output, compute, reporter)


def with_flags(config: CompareModelsConfig, v: Mapping[str, Any]) -> CompareModelsConfig:
    """The scan flags of ``geoprobe run`` change every model's scan settings."""
    return dataclasses.replace(config, scan=scan_with_flags(config.scan, v))


def check(config: CompareModelsConfig, load: LoadOptions) -> None:
    """Before any work: the loading settings apply to every model, and every set is a corpus set."""
    from geoprobe.prompts import prompt_source_kind

    for model in config.models:
        dataclasses.replace(load, model=model).check()
    for s in config.sets:
        if prompt_source_kind(s) != "corpus":
            raise GeoprobeError(
                f"set {s!r} is not a corpus set; compare-models samples mixed or a domain (geoprobe prompts lists them)"
            )


def execute(config: CompareModelsConfig, load: LoadOptions, output: OutputOptions, reporter: Reporter) -> Any:
    """Sample every set once with ``config.sampler``, scan each model on exactly those prompts (each loaded
    like ``load``, with its own model), then compare the runs, all under ``output.out`` (default
    runs/compare-models)."""
    from geoprobe.outputs import OutputLock, check_location, check_same_kind
    from geoprobe.prompts import write_prompt_sets
    from geoprobe.sampling import sample_corpus_set

    fmt = check_figures(output.figures)
    target = output.out or Path("runs") / "compare-models"
    files = {s: target / f"prompts-{s}.jsonl" for s in config.sets}
    runs = {(m, s): target / model_run_dir(m, f"-{s}").name for m in config.models for s in config.sets}
    check_location(target, writes="run", result=OUTPUTS.result)
    with OutputLock(target):
        for p in files.values():
            check_same_kind(p, PROMPTS_KIND)
        check_same_kind(target / OUTPUTS.result, ModelComparison.KIND)  # before any work, not after the scans
        check_same_kind(target / str(OUTPUTS.page), PAGE_KIND)
        partial = target / PARTIAL
        resuming = (partial / "manifest.json").exists() and not output.force
        existing = [p for p in [*files.values(), *runs.values()] if p.exists()]
        if existing and not output.force and not resuming:
            raise OutputExistsError(
                f"{str(existing[0])!r} already exists; pass --force to replace this run or choose another --out"
            )
        if output.force:
            discard_partial(partial)
        fingerprint = {"config": dataclasses.asdict(config), "load": dataclasses.asdict(load)}
        kept = Units(partial, fingerprint, "compare-models")  # a rerun with other settings is refused here
        todo = [s for s in config.sets if not (resuming and files[s].is_file())]
        if todo:
            m = open_model(dataclasses.replace(load, model=config.sampler), reporter)
            for s in todo:
                with reporter.status(f"sampling {s} with {config.sampler} …"):
                    pset = sample_corpus_set(m, s, config.scan.sampling, seed=config.scan.seed)
                write_prompt_sets({s: pset}, files[s])
                reporter.say(
                    f"{s}: {len(pset.prompts)} prompts sampled with {config.sampler} (sha256 {pset.hash[:12]}) → "
                    f"{files[s]}"
                )
            del m
        kept.begin()  # from here on, the same run again resumes
        for (model, s), run_dir in runs.items():
            scan = dataclasses.replace(config.scan, prompts=str(files[s]))
            one = dataclasses.replace(load, model=model)
            if resuming and finished(run_dir, ScanResult, scan_request(one, scan), fmt):
                reporter.say(f"{model} on {s}: already scanned with these settings, reading {run_dir / 'results.json'}")
                continue
            force = output.force or not resuming or (run_dir / "results.json").exists()
            execute_scan(scan, one, OutputOptions(out=run_dir, force=force, figures=fmt, parent=target), reporter)
    result = compare_into(list(runs.values()), -1, OutputOptions(out=target, force=True, figures=fmt), reporter)
    discard_partial(partial)
    return result


def tiny() -> tuple[CompareModelsConfig, LoadOptions]:
    """Two tiny twins on one small sampled set, with few resamples."""
    from geoprobe.sampling import SamplingConfig

    scan = ScanConfig(
        sampling=SamplingConfig(candidates=40, per_stratum=3, min_tokens=8, max_tokens=32),
        n_resamples=20,
        pca_resamples=10,
        null_draws=10,
        n_permutations=20,
    )
    models = ("twin:llama-3.2-1b", "twin:pythia-410m")
    return CompareModelsConfig(models=models, sets=("math",), scan=scan), LoadOptions()


EXPERIMENT = Experiment(
    command="compare-models",
    config=CompareModelsConfig,
    results=(ModelComparison,),
    execute=execute,
    tiny=tiny,
    loads=tuple(f.name for f in load_fields() if f.name not in ("model", "revision")),
    flags=SCAN_FLAGS - {"prompts", "domain"},
    with_flags=with_flags,
    where="its [models] table (run, sets, sample_with)",
    check=check,
    resumes="the prompt files written and the scans finished (a scan stopped mid-way resumes its capture)",
)
