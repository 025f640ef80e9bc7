"""``geoprobe positional``: positional priors (BAM generalised-Gaussian fits) and long-context stability,
or (``--windtunnel RUN``) a wind-tunnel transformer's error against sequence length
(geoprobe.positional.experiment runs both)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from geoprobe.cli.app import app, out
from geoprobe.cli.common import launch, prints, reporting
from geoprobe.cli.options import BATCH_HELP, LOAD, OUTPUT, LayersOpt, OutputOptions, SeedOpt, int_list, layers, takes
from geoprobe.errors import GeoprobeError
from geoprobe.models.loading import LoadOptions, load_fields
from geoprobe.positional.config import PositionalConfig
from geoprobe.positional.experiment import EXPERIMENT, tunnel_curve_into
from geoprobe.positional.result import PositionalResult, TunnelLengthCurve

#: the flags that do not apply with --windtunnel: the loading flags and the model's own settings
_MODEL_FLAGS = {
    **{f.name: f.metadata["flag"] for f in load_fields()},
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
        with reporting() as reporter:
            tunnel_curve_into(windtunnel, Ts, n_eval, n_resamples, output, reporter)
        return
    if "n_eval" in given:
        raise GeoprobeError("--n-eval applies only with --windtunnel; drop it or pass --windtunnel RUN_DIR")
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
    launch(EXPERIMENT, config, load, output)


@prints(PositionalResult)
def print_positional(result: Any, reporter: Any = None) -> None:
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


@prints(TunnelLengthCurve)
def print_tunnel(curve: Any, reporter: Any = None) -> None:
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
