"""``positional`` as an experiment: positional priors and long-context stability of one model into
``runs/<model>-positional`` (positional.json, positional.html); a run stopped part-way resumes from the
capture batches of each prompt length kept in ``<run>/positional.partial``. And
:func:`tunnel_curve_into`, ``geoprobe positional --windtunnel``: a wind-tunnel transformer's error
against sequence length."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

from geoprobe.errors import GeoprobeError
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
from geoprobe.positional.config import PositionalConfig
from geoprobe.positional.result import PositionalResult, TunnelLengthCurve
from geoprobe.rundir import RunOutputs

PARTIAL = "positional.partial"
OUTPUTS = RunOutputs.of(PositionalResult, partial=PARTIAL)
TUNNEL_OUTPUTS = RunOutputs.of(TunnelLengthCurve)
STAGES = Stages(width=16)
#: wind-tunnel lengths by default: these multiples of the training length
TUNNEL_FACTORS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0)


def with_flags(config: PositionalConfig, v: Mapping[str, Any]) -> PositionalConfig:
    """``--layers``, ``--batch-size``, ``--seed``."""
    given = {"layers": v.get("layer_spec"), "batch_size": v.get("batch_size"), "seed": v.get("seed")}
    given = {k: val for k, val in given.items() if val is not None}
    return dataclasses.replace(config, **given) if given else config


def execute(config: PositionalConfig, model: Any, output: OutputOptions, reporter: Reporter) -> PositionalResult:
    """Fit the priors on ``model``: positional.json and positional.html (default runs/<model>-positional)."""
    from geoprobe.positional.run import check_model, run_positional

    target = output.out or model_run_dir(model_name(model), "-positional")
    request = {"command": "positional", "load": load_request(model), "config": dataclasses.asdict(config)}

    def compute(run: Any) -> PositionalResult:
        m = open_model(model, reporter)
        check_model(config, m)
        return run_positional(m, config, progress=reporter, checkpoint_dir=target / PARTIAL)

    return run_into(target, OUTPUTS, PositionalResult, request, output, compute, reporter, stages=STAGES)


def tunnel_curve_into(
    run_dir: Path,
    lengths: tuple[int, ...] | None,
    n_eval: int,
    n_resamples: int,
    output: OutputOptions,
    reporter: Reporter,
) -> TunnelLengthCurve:
    """Error vs length of the wind-tunnel run ``run_dir``: positional.json/.html in ``output.out`` (default:
    ``<run_dir>-positional`` beside it; a run directory holds one command's run, so never in it)."""
    from geoprobe.checks import RESAMPLES_MAX, RESAMPLES_WHY, check_range
    from geoprobe.positional.tunnel import tunnel_length_curve
    from geoprobe.windtunnel.config import EVAL_MAX, EVAL_WHY

    if not (run_dir / "transformer" / "run.json").exists():
        raise GeoprobeError(
            f"--windtunnel {str(run_dir)!r} is not a wind-tunnel run (no transformer/run.json); pass a "
            "directory written by 'geoprobe windtunnel train'"
        )
    Ts = lengths
    if Ts is None:
        from geoprobe.windtunnel.train import read_spec

        K = int(read_spec(run_dir / "transformer").task["K"])
        Ts = tuple(sorted({max(1, round(K * f)) for f in TUNNEL_FACTORS}))
    if min(Ts) < 1 or list(Ts) != sorted(set(Ts)):
        raise GeoprobeError(f"--lengths {','.join(map(str, Ts))} must be positive, increasing and without duplicates")
    if n_eval < 2 or n_resamples < 2:
        raise GeoprobeError(f"--n-eval {n_eval} and --n-resamples {n_resamples} must both be at least 2 for a CI")
    check_range(n_eval, high=EVAL_MAX, where="--n-eval", why=EVAL_WHY)
    check_range(n_resamples, high=RESAMPLES_MAX, where="--n-resamples", why=RESAMPLES_WHY)
    request = {
        "command": "positional --windtunnel",
        "run": str(run_dir),
        "lengths": list(Ts),
        "n_eval": n_eval,
        "n_resamples": n_resamples,
    }

    def compute(run: Any) -> TunnelLengthCurve:
        return tunnel_length_curve(run_dir, Ts, n_eval=n_eval, n_resamples=n_resamples, progress=reporter)

    default = run_dir.parent / f"{run_dir.name}-positional"
    return run_into(
        output.out or default,
        TUNNEL_OUTPUTS,
        TunnelLengthCurve,
        request,
        output,
        compute,
        reporter,
        stages=Stages(width=20),
    )


def tiny() -> tuple[PositionalConfig, LoadOptions]:
    """Two short lengths, five prompts each, two layers of a tiny twin."""
    config = PositionalConfig(lengths=(8, 16), n_prompts=5, n_resamples=20, layers=(0, -1), batch_size=3)
    return config, LoadOptions(model="twin:llama-3.2-1b")


EXPERIMENT = Experiment(
    command="positional",
    config=PositionalConfig,
    results=(PositionalResult, TunnelLengthCurve),
    execute=execute,
    tiny=tiny,
    loads=tuple(f.name for f in load_fields()),
    model_given=True,
    flags=frozenset({"layer_spec", "batch_size", "seed"}),
    with_flags=with_flags,
    where="its [positional] table (geoprobe positional --help)",
    stages=STAGES,
    resumes="the finished capture batches of each length in <run>/positional.partial",
)
