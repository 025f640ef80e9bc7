"""``compare-domains`` as an experiment: sample, capture and compare into ``runs/<model>-domains``
(prompts.jsonl, domains.json, domains.html); a run stopped while it captured the candidates resumes from
the batches kept in ``<run>/domains.partial``."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from geoprobe.domains.config import DomainsConfig
from geoprobe.domains.result import DomainComparison
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
from geoprobe.kinds import PROMPTS_KIND
from geoprobe.models.options import LoadOptions, load_fields
from geoprobe.rundir import RunOutputs
from geoprobe.sampling import SamplingConfig

PARTIAL = "domains.partial"
OUTPUTS = RunOutputs.of(DomainComparison, data={"prompts.jsonl": PROMPTS_KIND}, partial=PARTIAL)
STAGES = Stages({"capture": "candidates: entropy + values"})


def with_flags(config: DomainsConfig, v: Mapping[str, Any]) -> DomainsConfig:
    """``config`` changed by the flags of ``geoprobe run`` it honours (the sampling flags, --batch-size, --seed)."""
    from geoprobe.scan.experiment import sampling_changes

    sampling = {k: val for k, val in sampling_changes(v).items() if val is not None}
    if sampling:
        config = dataclasses.replace(
            config, sampling=SamplingConfig(**{**dataclasses.asdict(config.sampling), **sampling})
        )
    given = {k: v[k] for k in ("batch_size", "seed") if v.get(k) is not None}
    return dataclasses.replace(config, **given) if given else config


def execute(config: DomainsConfig, model: Any, output: OutputOptions, reporter: Reporter) -> DomainComparison:
    """Sample, capture and compare domains: prompts.jsonl, domains.json and domains.html in the run directory."""
    from geoprobe.domains.run import check_domains, compare_domains_run
    from geoprobe.prompts import write_prompt_sets

    check_domains(config.domains)  # unknown or missing domains fail before the model loads
    target = output.out or model_run_dir(model_name(model), "-domains")
    request = {"command": "compare-domains", "load": load_request(model), "config": dataclasses.asdict(config)}

    def compute(run: Any) -> DomainComparison:
        m = open_model(model, reporter)
        result = compare_domains_run(m, config, progress=reporter, checkpoint_dir=target / PARTIAL)
        write_prompt_sets(result.sets, target / "prompts.jsonl")
        return result.comparison

    return run_into(target, OUTPUTS, DomainComparison, request, output, compute, reporter, stages=STAGES)


def tiny() -> tuple[DomainsConfig, LoadOptions]:
    """One domain on a tiny twin, small pools, few resamples."""
    sampling = SamplingConfig(candidates=60, per_stratum=4, min_tokens=8, max_tokens=32)
    config = DomainsConfig(
        domains=("math",), domain_candidates=40, sampling=sampling, n_resamples=20, n_permutations=20, null_draws=10
    )
    return config, LoadOptions(model="twin:llama-3.2-1b")


EXPERIMENT = Experiment(
    command="compare-domains",
    config=DomainsConfig,
    results=(DomainComparison,),
    execute=execute,
    tiny=tiny,
    loads=tuple(f.name for f in load_fields()),
    model_given=True,
    flags=frozenset({"candidates", "per_quintile", "min_tokens", "max_prompt_tokens", "batch_size", "seed"}),
    with_flags=with_flags,
    where="its [domains], [sampling], [analyses] tables",
    stages=STAGES,
    resumes="the finished capture batches in <run>/domains.partial",
)
