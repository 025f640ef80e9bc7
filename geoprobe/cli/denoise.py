"""``geoprobe denoise``: in-context denoising with one attention layer (arXiv 2502.05164);
geoprobe.denoise.experiment runs it."""

from __future__ import annotations

from typing import Any, Optional

import typer

from geoprobe.cli.app import app, out
from geoprobe.cli.common import launch, print_rows, prints
from geoprobe.cli.options import OUTPUT, OutputOptions, SeedOpt, int_list, takes
from geoprobe.denoise.experiment import EXPERIMENT
from geoprobe.denoise.result import DenoiseResult


@app.command("denoise")
@takes(OUTPUT)
def denoise_cmd(
    output: OutputOptions,
    task: str = typer.Option("linear", "--task", help="linear | sphere | mixture"),
    context_length: Optional[int] = typer.Option(
        None, "--context-length", help="L, clean context tokens (default 500, at most 100000)"
    ),
    dim: Optional[int] = typer.Option(
        None,
        "--dim",
        help="d, subspace dimension (linear, sphere; default 8): the sphere is S^(d-1); with --convention authors "
        "the sphere's own dimension (S^d); at most 1024",
    ),
    convention: Optional[str] = typer.Option(
        None,
        "--convention",
        help="geoprobe | authors: how --dim and --transfer-dims are read on the sphere (authors: the paper's d, "
        "S^d in a (d+1)-dim subspace, so the paper's d = 8 is geoprobe's d = 9); default geoprobe",
    ),
    ambient: Optional[int] = typer.Option(None, "--ambient", help="n, token dimension (default 16, at most 1024)"),
    clusters: Optional[int] = typer.Option(None, "--clusters", help="k, mixture centres (default 8, at most 1024)"),
    signal_var: Optional[float] = typer.Option(
        None,
        "--signal-var",
        help="σ0², a VARIANCE: coordinate variance "
        "(linear, default 2) or within-cluster variance (mixture, default 0.02)",
    ),
    noise_var: Optional[float] = typer.Option(
        None,
        "--noise-var",
        help="σZ², a VARIANCE: query noise per coordinate (default 1 linear, 0.1 sphere and mixture)",
    ),
    radius: Optional[float] = typer.Option(None, "--radius", help="R, sphere radius (default 1)"),
    steps: Optional[int] = typer.Option(None, "--steps", help="Adam steps per model (default 2000, at most 1000000)"),
    batch_size: Optional[int] = typer.Option(
        None, "--batch-size", help="fresh prompts per step (default 64, at most 65536; memory is checked too)"
    ),
    lr: Optional[float] = typer.Option(None, "--lr", help="Adam learning rate (default 0.01; ×0.1 at 80 % and 90 %)"),
    lengths: Optional[str] = typer.Option(
        None,
        "--lengths",
        help="context lengths for the MSE-vs-L sweep (default 20,50,100,200,500, each at most 100000; 'none' skips it)",
    ),
    transfer_dims: Optional[str] = typer.Option(
        None,
        "--transfer-dims",
        help="test dimensions d' for the dimension transfer (default 2,4,8,12, at most 1024; 'none' skips it; "
        "linear and sphere)",
    ),
    warp: bool = typer.Option(False, "--warp", help="also train on the warped geometry x → Ax"),
    warp_condition: Optional[float] = typer.Option(None, "--warp-condition", help="condition number of A (default 3)"),
    no_energy: bool = typer.Option(False, "--no-energy", help="skip the energy-landscape section"),
    n_eval: Optional[int] = typer.Option(
        None, "--n-eval", help="held-out prompts per evaluation (default 2000, at most 1000000; memory is checked too)"
    ),
    n_resamples: Optional[int] = typer.Option(
        None, "--n-resamples", help="bootstrap resamples (default 1000, at most 100000)"
    ),
    tiny: bool = typer.Option(
        False, "--tiny", help="seconds-scale smoke run (n=6, d=2, L=40, 60 steps); flags still override"
    ),
    seed: int = SeedOpt,
) -> None:
    """Train one-layer softmax and linear attention to denoise in context; compare with the Bayes-optimal denoiser."""
    config = make_config(
        task=task,
        context_length=context_length,
        dim=dim,
        convention=convention,
        ambient=ambient,
        clusters=clusters,
        signal_var=signal_var,
        noise_var=noise_var,
        radius=radius,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        lengths=int_list(lengths, "--lengths", empty_ok=True),
        transfer_dims=int_list(transfer_dims, "--transfer-dims", empty_ok=True),
        warp=warp,
        warp_condition=warp_condition,
        energy=not no_energy,
        n_eval=n_eval,
        n_resamples=n_resamples,
        seed=seed,
        tiny=tiny,
    )
    launch(EXPERIMENT, config, None, output)


def make_config(tiny: bool = False, **values: Any) -> Any:
    """A DenoiseConfig from CLI values (``None`` = the default, or the tiny preset's with ``tiny``)."""
    from geoprobe.denoise.config import TINY, DenoiseConfig

    given = {k: v for k, v in values.items() if v is not None}
    base = dict(TINY) if tiny else {}
    return DenoiseConfig(**{**base, **given})


@prints(DenoiseResult)
def print_denoise(result: Any, reporter: Any = None) -> None:
    from geoprobe.denoise.report import scores_table

    print_rows(
        f"{result.name}: MSE per coordinate on {result.config['n_eval']} held-out prompts", scores_table(result.scores)
    )
    for c in result.checks():
        mark = "pass" if c["pass"] else "FAIL"
        out.print(
            f"  {mark}: {c['check']} {c['target']}: measured {c['measured']:.4f} {c['ci']}",
            highlight=False,
            soft_wrap=True,
        )
