"""``geoprobe positional``: positional priors (BAM generalised-Gaussian fits) and long-context stability,
or (``--windtunnel RUN``) a wind-tunnel transformer's error against sequence length."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from geoprobe.cli.app import app, out
from geoprobe.cli.common import execute_run, open_model
from geoprobe.cli.options import (
    BATCH_HELP,
    LOAD,
    OUTPUT,
    LayersOpt,
    OutputOptions,
    SeedOpt,
    int_list,
    layers,
    model_run_dir,
    takes,
)
from geoprobe.cli.progress import stage_progress
from geoprobe.errors import GeoprobeError
from geoprobe.models.loading import LoadOptions
from geoprobe.positional.result import PositionalResult, TunnelLengthCurve
from geoprobe.rundir import RunOutputs

OUTPUTS = RunOutputs.of(PositionalResult)
TUNNEL_OUTPUTS = RunOutputs.of(TunnelLengthCurve)
#: wind-tunnel lengths by default: these multiples of the training length
TUNNEL_FACTORS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0)
_MODEL_FLAGS = {
    "model": "--model",
    "revision": "--revision",
    "dtype": "--dtype",
    "device": "--device",
    "device_map": "--device-map",
    "trust_remote_code": "--trust-remote-code",
    "allow_pickle": "--allow-pickle",
    "max_distance": "--max-distance",
    "n_prompts": "--n-prompts",
    "layer_spec": "--layers",
    "exclude_first": "--exclude-first",
    "no_stability": "--no-stability",
    "batch_size": "--batch-size",
    "seed": "--seed",
}


def _doubling(max_length: int) -> tuple[int, ...]:
    from geoprobe.checks import check_range
    from geoprobe.positional.config import LENGTH_MAX, LENGTH_WHY

    check_range(max_length, high=LENGTH_MAX, where="--max-length", why=LENGTH_WHY)
    if max_length < 16:
        raise GeoprobeError(
            f"--max-length {max_length} is below the grid's first length 16; pass 16 or more, or --lengths"
        )
    out_, T = [], 16
    while T < max_length:
        out_.append(T)
        T *= 2
    return (*out_, max_length)


@app.command("positional")
@takes(LOAD, OUTPUT)
def positional(
    load: LoadOptions,
    output: OutputOptions,
    given: frozenset,
    lengths: Optional[str] = typer.Option(
        None,
        "--lengths",
        help="prompt lengths in tokens, increasing (default 16,32,64,128,256; at most 131072, and the model's "
        "context); with --windtunnel: task lengths K",
    ),
    max_length: Optional[int] = typer.Option(
        None, "--max-length", help="instead of --lengths: 16, 32, 64, … up to this (at most 131072)"
    ),
    max_distance: Optional[int] = typer.Option(
        None,
        "--max-distance",
        help="largest distance Δ fitted (default: longest length − 1 − exclude-first; at most 131072)",
    ),
    n_prompts: int = typer.Option(24, "--n-prompts", help="prompts per length (at most 1000)"),
    layer_spec: Optional[str] = LayersOpt,
    exclude_first: int = typer.Option(
        1, "--exclude-first", help="first tokens excluded as attention sinks (their mass is reported)"
    ),
    n_resamples: int = typer.Option(200, "--n-resamples", help="bootstrap resamples over prompts (at most 100000)"),
    no_stability: bool = typer.Option(False, "--no-stability", help="fit the priors at the longest length only"),
    windtunnel: Optional[Path] = typer.Option(
        None, "--windtunnel", help="a wind-tunnel run directory: error vs length instead (written into it unless --out)"
    ),
    n_eval: int = typer.Option(256, "--n-eval", help="--windtunnel: sequences per length (at most 50000)"),
    seed: int = SeedOpt,
    batch_size: int = typer.Option(8, "--batch-size", help=BATCH_HELP),
) -> None:
    """Fit per-head positional priors (BAM) and measure geometry over prompt length; writes positional.json/.html."""
    Ts = int_list(lengths, "--lengths")
    if max_length is not None:
        if Ts is not None:
            raise GeoprobeError("pass either --lengths or --max-length, not both")
        Ts = _doubling(max_length)
    if windtunnel is not None:
        unused = [flag for name, flag in _MODEL_FLAGS.items() if name in given]
        if unused:
            raise GeoprobeError(
                f"{unused[0]} does not apply with --windtunnel (the trained wind-tunnel model is scored "
                f"on its own task); drop {unused[0]}"
            )
        execute_tunnel(windtunnel, Ts, n_eval, n_resamples, output)
        return
    if "n_eval" in given:
        raise GeoprobeError("--n-eval applies only with --windtunnel; drop it or pass --windtunnel RUN_DIR")
    from geoprobe.positional.config import PositionalConfig

    config = PositionalConfig(
        **({"lengths": Ts} if Ts is not None else {}),
        max_distance=max_distance,
        n_prompts=n_prompts,
        layers=layers(layer_spec),
        exclude_first=exclude_first,
        n_resamples=n_resamples,
        seed=seed,
        batch_size=batch_size,
        stability=not no_stability,
    )
    execute_positional(load, config, output)


def execute_positional(load: LoadOptions, config: Any, output: OutputOptions) -> Any:
    """Fit the priors on ``load.model``: positional.json and positional.html (default runs/<model>-positional)."""
    from geoprobe.positional.run import check_model, run_positional

    target = output.out or model_run_dir(load.model, "-positional")
    request = {"command": "positional", "load": dataclasses.asdict(load), "config": dataclasses.asdict(config)}

    def compute(run: Any) -> Any:
        m = open_model(load)
        check_model(config, m)
        with stage_progress(width=16) as progress:
            return run_positional(m, config, progress=progress)

    return execute_run(target, OUTPUTS, request, output, compute, _print)


def _print(result: Any) -> None:
    table = Table(title=f"{result.model}: head classes at T = {result.fit_length} (Δ ≤ {result.max_distance})")
    table.add_column("class")
    table.add_column("heads", justify="right")
    for k, v in result.class_counts().items():
        table.add_row(k, str(v))
    out.print(table)
    bs = result.beta_summary()
    if bs.get("n"):
        out.print(
            f"β over {bs['n']} fitted heads: median {bs['median']:.2f}, IQR [{bs['q25']:.2f}, {bs['q75']:.2f}]",
            highlight=False,
        )
    if result.stability is not None:
        s, last = result.stability, result.stability.layers[-1]
        out.print(
            f"critical length (layer {last}): PC1 ratio {s.critical('pc1', last)}, "
            f"|ρ| {s.critical('alignment', last)} (None: never degrades on {list(s.lengths)})",
            highlight=False,
        )


def execute_tunnel(
    run_dir: Path, Ts: Optional[tuple[int, ...]], n_eval: int, n_resamples: int, output: OutputOptions
) -> Any:
    """Error vs length of the wind-tunnel run ``run_dir``: positional.json/.html in ``output.out`` (default:
    ``<run_dir>-positional`` beside it; a run directory holds one command's run, so never in it)."""
    from geoprobe.positional.tunnel import tunnel_length_curve

    if not (run_dir / "transformer" / "run.json").exists():
        raise GeoprobeError(
            f"--windtunnel {str(run_dir)!r} is not a wind-tunnel run (no transformer/run.json); pass a "
            "directory written by 'geoprobe windtunnel train'"
        )
    if Ts is None:
        from geoprobe.windtunnel.train import read_spec

        K = int(read_spec(run_dir / "transformer").task["K"])
        Ts = tuple(sorted({max(1, round(K * f)) for f in TUNNEL_FACTORS}))
    if min(Ts) < 1 or list(Ts) != sorted(set(Ts)):
        raise GeoprobeError(f"--lengths {','.join(map(str, Ts))} must be positive, increasing and without duplicates")
    if n_eval < 2 or n_resamples < 2:
        raise GeoprobeError(f"--n-eval {n_eval} and --n-resamples {n_resamples} must both be at least 2 for a CI")
    from geoprobe.checks import RESAMPLES_MAX, RESAMPLES_WHY, check_range
    from geoprobe.windtunnel.config import EVAL_MAX, EVAL_WHY

    check_range(n_eval, high=EVAL_MAX, where="--n-eval", why=EVAL_WHY)
    check_range(n_resamples, high=RESAMPLES_MAX, where="--n-resamples", why=RESAMPLES_WHY)
    request = {
        "command": "positional --windtunnel",
        "run": str(run_dir),
        "lengths": list(Ts),
        "n_eval": n_eval,
        "n_resamples": n_resamples,
    }

    def compute(run: Any) -> Any:
        with stage_progress(width=20) as progress:
            return tunnel_length_curve(run_dir, Ts, n_eval=n_eval, n_resamples=n_resamples, progress=progress)

    def show(curve: Any) -> None:
        table = Table(title=f"wind tunnel {curve.task.get('name')} trained at K = {curve.train_K}: error vs length")
        for col in ("K", "MAE per sample (bits)", "KL (bits)"):
            table.add_column(col, justify="right")
        for mt in curve.metrics:
            table.add_row(
                str(mt.K),
                f"{mt.mae_sample.value:.4f} [{mt.mae_sample.low:.4f}, {mt.mae_sample.high:.4f}]",
                f"{mt.kl.value:.4f}",
            )
        out.print(table)
        out.print(f"critical length: {curve.critical_length}", highlight=False)

    default = run_dir.parent / f"{run_dir.name}-positional"
    return execute_run(output.out or default, TUNNEL_OUTPUTS, request, output, compute, show)
