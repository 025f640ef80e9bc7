"""`geoprobe denoise`: in-context denoising with one attention layer (arXiv 2502.05164).

Registered on :data:`geoprobe.cli.app`; errors follow the CLI's rule (one line, exit 2)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from geoprobe.cli import (FiguresOpt, ForceOpt, SeedOpt, app, check_figures, claim_run_dir, int_list, out, print_rows,
                          stage_progress, write_figures)
from geoprobe.errors import GeoprobeError

OUTPUTS = ("denoise.json", "denoise.html")


@app.command("denoise")
def denoise_cmd(
    task: str = typer.Option("linear", "--task", help="linear | sphere | mixture"),
    context_length: Optional[int] = typer.Option(None, "--context-length", help="L, clean context tokens (default 500)"),
    dim: Optional[int] = typer.Option(None, "--dim", help="d, subspace / sphere dimension (linear, sphere; default 8)"),
    ambient: Optional[int] = typer.Option(None, "--ambient", help="n, token dimension (default 16)"),
    clusters: Optional[int] = typer.Option(None, "--clusters", help="k, mixture centres (default 8)"),
    signal_var: Optional[float] = typer.Option(None, "--signal-var", help="σ0², a VARIANCE: coordinate variance "
                                               "(linear, default 2) or within-cluster variance (mixture, default 0.02)"),
    noise_var: Optional[float] = typer.Option(None, "--noise-var", help="σZ², a VARIANCE: query noise per coordinate "
                                              "(default 1 linear, 0.1 sphere and mixture)"),
    radius: Optional[float] = typer.Option(None, "--radius", help="R, sphere radius (default 1)"),
    steps: Optional[int] = typer.Option(None, "--steps", help="Adam steps per model (default 2000)"),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="fresh prompts per step (default 64)"),
    lr: Optional[float] = typer.Option(None, "--lr", help="Adam learning rate (default 0.01; ×0.1 at 80 % and 90 %)"),
    lengths: Optional[str] = typer.Option(None, "--lengths", help="context lengths for the MSE-vs-L sweep "
                                          "(default 20,50,100,200,500; 'none' skips it)"),
    transfer_dims: Optional[str] = typer.Option(None, "--transfer-dims", help="test dimensions d' for the dimension "
                                                "transfer (default 2,4,8,12; 'none' skips it; linear and sphere)"),
    warp: bool = typer.Option(False, "--warp", help="also train on the warped geometry x → Ax"),
    warp_condition: Optional[float] = typer.Option(None, "--warp-condition", help="condition number of A (default 3)"),
    no_energy: bool = typer.Option(False, "--no-energy", help="skip the energy-landscape section"),
    n_eval: Optional[int] = typer.Option(None, "--n-eval", help="held-out prompts per evaluation (default 2000)"),
    n_resamples: Optional[int] = typer.Option(None, "--n-resamples", help="bootstrap resamples (default 1000)"),
    tiny: bool = typer.Option(False, "--tiny", help="seconds-scale smoke run (n=6, d=2, L=40, 60 steps); flags still override"),
    seed: int = SeedOpt,
    out_dir: Optional[Path] = typer.Option(None, "--out", "-o", help="run directory (default runs/denoise-TASK)"),
    force: bool = ForceOpt,
    figures: Optional[str] = FiguresOpt,
) -> None:
    """Train one-layer softmax and linear attention to denoise in context; compare with the Bayes-optimal denoiser."""
    config = make_config(task=task, context_length=context_length, dim=dim, ambient=ambient, clusters=clusters,
                         signal_var=signal_var, noise_var=noise_var, radius=radius, steps=steps,
                         batch_size=batch_size, lr=lr, lengths=int_list(lengths, "--lengths", empty_ok=True),
                         transfer_dims=int_list(transfer_dims, "--transfer-dims", empty_ok=True), warp=warp,
                         warp_condition=warp_condition, energy=not no_energy, n_eval=n_eval, n_resamples=n_resamples,
                         seed=seed, tiny=tiny)
    run_config(config, out_dir, force, figures)


def make_config(tiny: bool = False, **values):
    """A DenoiseConfig from CLI values (``None`` = the default, or the tiny preset's with ``tiny``)."""
    from geoprobe.denoise.run import TINY, DenoiseConfig

    given = {k: v for k, v in values.items() if v is not None}
    base = dict(TINY) if tiny else {}
    return DenoiseConfig(**{**base, **given})


def run_config(config, out_dir: Optional[Path], force: bool, figures: Optional[str] = None) -> Path:
    """Run ``config`` and write denoise.json + denoise.html into the run directory (checked before any work)."""
    from geoprobe.denoise.run import run_denoise
    from geoprobe.report.denoise import write_denoise_report

    run_dir = claim_run_dir(out_dir or Path("runs") / f"denoise-{config.task}", OUTPUTS, force)
    figures = check_figures(figures, run_dir, force)  # before any training
    with stage_progress() as progress:
        result = run_denoise(config, progress=progress)
    run_dir.mkdir(parents=True, exist_ok=True)
    result.save(run_dir / "denoise.json")
    write_denoise_report(result, run_dir / "denoise.html", force=True)  # existence was checked above
    _print_summary(result)
    out.print(f"wrote {run_dir / 'denoise.json'} and {run_dir / 'denoise.html'}")
    write_figures(result, run_dir, figures, force)
    return run_dir


def _print_summary(result) -> None:
    from geoprobe.denoise.result import scores_table

    print_rows(f"{result.name}: MSE per coordinate on {result.config['n_eval']} held-out prompts",
               scores_table(result.scores))
    for c in result.checks():
        mark = "pass" if c["pass"] else "FAIL"
        out.print(f"  {mark}: {c['check']} {c['target']}: measured {c['measured']:.4f} {c['ci']}", highlight=False, soft_wrap=True)


def run_recipe(probe, out_dir: Optional[Path], force: bool, seed: Optional[int], figures: Optional[str] = None) -> None:
    """``geoprobe run probes/denoise.toml``: the recipe's DenoiseConfig, --seed overriding."""
    from dataclasses import replace

    config = probe.config if seed is None else replace(probe.config, seed=seed)
    run_config(config, out_dir, force, figures)
