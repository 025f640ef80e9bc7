"""`geoprobe positional`: positional priors (BAM generalised-Gaussian fits) and long-context stability.

Registered on :data:`geoprobe.cli.app`; errors follow the CLI's rule (one line, exit 2)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from geoprobe.cli import (DeviceOpt, DtypeOpt, FiguresOpt, ForceOpt, ModelOpt, SeedOpt, _layers, _open, app, check_figures,
                          claim_run_dir, int_list, model_run_dir, out, stage_progress, write_figures)
from geoprobe.errors import GeoprobeError

OUTPUTS = ("positional.json", "positional.html")
#: wind-tunnel lengths by default: these multiples of the training length
TUNNEL_FACTORS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0)


def _doubling(max_length: int) -> tuple[int, ...]:
    if max_length < 16:
        raise GeoprobeError(f"--max-length {max_length} is below the grid's first length 16; pass 16 or more, or --lengths")
    out_, T = [], 16
    while T < max_length:
        out_.append(T)
        T *= 2
    return (*out_, max_length)


@app.command("positional")
def positional(
    model: str = ModelOpt,
    lengths: Optional[str] = typer.Option(None, "--lengths", help="prompt lengths in tokens, increasing (default 16,32,64,128,256); with --windtunnel: task lengths K"),
    max_length: Optional[int] = typer.Option(None, "--max-length", help="instead of --lengths: 16, 32, 64, … up to this length"),
    max_distance: Optional[int] = typer.Option(None, "--max-distance", help="largest distance Δ fitted (default: longest length − 1 − exclude-first)"),
    n_prompts: int = typer.Option(24, "--n-prompts", help="prompts per length"),
    layers: Optional[str] = typer.Option(None, "--layers", help="comma-separated layer indices (negative from the end) or all"),
    exclude_first: int = typer.Option(1, "--exclude-first", help="first tokens excluded as attention sinks (their mass is reported)"),
    n_resamples: int = typer.Option(200, "--n-resamples", help="bootstrap resamples over prompts"),
    no_stability: bool = typer.Option(False, "--no-stability", help="fit the priors at the longest length only"),
    windtunnel: Optional[Path] = typer.Option(None, "--windtunnel", help="a wind-tunnel run directory: error vs length instead"),
    n_eval: int = typer.Option(256, "--n-eval", help="--windtunnel: sequences per length"),
    seed: int = SeedOpt,
    dtype: str = DtypeOpt,
    device: str = DeviceOpt,
    batch_size: int = typer.Option(8, "--batch-size"),
    out_dir: Optional[Path] = typer.Option(None, "--out", "-o", help="run directory (default runs/<model>-positional, or the --windtunnel run)"),
    force: bool = ForceOpt,
    figures: Optional[str] = FiguresOpt,
) -> None:
    """Fit per-head positional priors (BAM) and measure geometry over prompt length; writes positional.json/.html."""
    Ts = int_list(lengths, "--lengths")
    if max_length is not None:
        if Ts is not None:
            raise GeoprobeError("pass either --lengths or --max-length, not both")
        Ts = _doubling(max_length)
    if windtunnel is not None:
        _run_tunnel(windtunnel, Ts, n_eval, n_resamples, out_dir, force, figures)
        return
    from geoprobe.positional.run import PositionalConfig

    config = PositionalConfig(**({"lengths": Ts} if Ts is not None else {}), max_distance=max_distance,
                              n_prompts=n_prompts, layers=_layers(layers), exclude_first=exclude_first,
                              n_resamples=n_resamples, seed=seed, batch_size=batch_size, stability=not no_stability)
    target = claim_run_dir(out_dir or model_run_dir(model, "-positional"), OUTPUTS, force)
    figures = check_figures(figures, target, force)
    run_config(model, config, dict(dtype=dtype, device=device), target, figures, force)


def run_config(model: str, config, load_options: dict, target: Path, figures: Optional[str] = None,
               force: bool = False) -> None:
    """Load ``model``, run, write positional.json and positional.html into ``target`` (already claimed)."""
    from geoprobe.positional.run import check_model, run_positional
    from geoprobe.report.positional import write_positional_report

    m = _open(model, load_options)
    check_model(config, m)
    with stage_progress(width=16) as progress:
        result = run_positional(m, config, progress=progress)
    result.save(target / "positional.json")
    report = write_positional_report(result, target / "positional.html", force=True)  # existence checked first
    _print(result)
    out.print(f"wrote {report} and {target / 'positional.json'}")
    write_figures(result, target, figures, force)


def _print(result) -> None:
    table = Table(title=f"{result.model}: head classes at T = {result.fit_length} (Δ ≤ {result.max_distance})")
    table.add_column("class")
    table.add_column("heads", justify="right")
    for k, v in result.class_counts().items():
        table.add_row(k, str(v))
    out.print(table)
    bs = result.beta_summary()
    if bs.get("n"):
        out.print(f"β over {bs['n']} fitted heads: median {bs['median']:.2f}, IQR [{bs['q25']:.2f}, {bs['q75']:.2f}]",
                  highlight=False)
    if result.stability is not None:
        s, last = result.stability, result.stability.layers[-1]
        out.print(f"critical length (layer {last}): PC1 ratio {s.critical('pc1', last)}, "
                  f"|ρ| {s.critical('alignment', last)} (None: never degrades on {list(s.lengths)})", highlight=False)


def _run_tunnel(run_dir: Path, Ts: Optional[tuple[int, ...]], n_eval: int, n_resamples: int, out_dir: Optional[Path],
                force: bool, figures: Optional[str] = None) -> None:
    from geoprobe.positional.tunnel import tunnel_length_curve
    from geoprobe.report.positional import write_positional_report

    if not (run_dir / "transformer" / "run.json").exists():
        raise GeoprobeError(f"--windtunnel {str(run_dir)!r} is not a wind-tunnel run (no transformer/run.json); pass a "
                            "directory written by 'geoprobe windtunnel train'")
    if Ts is None:
        from geoprobe.windtunnel.train import read_spec

        K = int(read_spec(run_dir / "transformer").task["K"])
        Ts = tuple(sorted({max(1, round(K * f)) for f in TUNNEL_FACTORS}))
    if min(Ts) < 1 or list(Ts) != sorted(set(Ts)):
        raise GeoprobeError(f"--lengths {','.join(map(str, Ts))} must be positive, increasing and without duplicates")
    if n_eval < 2 or n_resamples < 2:
        raise GeoprobeError(f"--n-eval {n_eval} and --n-resamples {n_resamples} must both be at least 2 for a CI")
    target = claim_run_dir(out_dir or run_dir, OUTPUTS, force)
    figures = check_figures(figures, target, force)
    with stage_progress(width=20) as progress:
        curve = tunnel_length_curve(run_dir, Ts, n_eval=n_eval, n_resamples=n_resamples, progress=progress)
    curve.save(target / "positional.json")
    report = write_positional_report(curve, target / "positional.html", force=True)
    table = Table(title=f"wind tunnel {curve.task.get('name')} trained at K = {curve.train_K}: error vs length")
    for col in ("K", "MAE per sample (bits)", "KL (bits)"):
        table.add_column(col, justify="right")
    for mt in curve.metrics:
        table.add_row(str(mt.K), f"{mt.mae_sample.value:.4f} [{mt.mae_sample.low:.4f}, {mt.mae_sample.high:.4f}]",
                      f"{mt.kl.value:.4f}")
    out.print(table)
    out.print(f"critical length: {curve.critical_length}", highlight=False)
    out.print(f"wrote {report} and {target / 'positional.json'}")
    write_figures(curve, target, figures, force)


def run_recipe(probe, model: str, load_options: dict, out_dir: Optional[Path], force: bool, seed: Optional[int],
               figures: Optional[str] = None) -> None:
    """``geoprobe run probes/positional.toml``: the recipe's PositionalConfig, --seed overriding."""
    from dataclasses import replace

    config = probe.config if seed is None else replace(probe.config, seed=seed)
    target = claim_run_dir(out_dir or model_run_dir(model, "-positional"), OUTPUTS, force)
    figures = check_figures(figures, target, force)
    run_config(model, config, load_options, target, figures, force)
