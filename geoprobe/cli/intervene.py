"""``geoprobe intervene``: entropy-axis interventions during SULA (arXiv 2512.23752 §4.5–4.6, §6.2);
geoprobe.intervene.experiment runs it."""

from __future__ import annotations

from typing import Any, Optional

import typer
from rich.table import Table

from geoprobe.cli.app import app, out
from geoprobe.cli.common import launch, prints
from geoprobe.cli.options import LOAD, OUTPUT, BatchOpt, OutputOptions, ResamplesOpt, SeedOpt, number_list, takes
from geoprobe.cli.sula import FirstTokenOpt, LabelsOpt, label_pair
from geoprobe.intervene.config import InterventionConfig
from geoprobe.intervene.experiment import EXPERIMENT
from geoprobe.intervene.result import InterventionResult
from geoprobe.models.loading import LoadOptions


@app.command()
@takes(LOAD, OUTPUT)
def intervene(
    load: LoadOptions,
    output: OutputOptions,
    layers: Optional[str] = typer.Option(
        None,
        "--layers",
        help="layers edited together, e.g. 12 or 8,12,16 (default: "
        "the paper's 12 | 23 | 8,12,16,20,23 of 24, at the same relative depth)",
    ),
    op: str = typer.Option(
        "cut",
        "--op",
        help="cut (remove λ of the axis component) | only (keep the axis component) | "
        "shift (move by k·σ along the axis)",
    ),
    strength: Optional[str] = typer.Option(
        None,
        "--strength",
        help="comma-separated strengths (dose–response; at most 100); cut/only "
        "in [0, 1]; default cut 0.25,0.5,1 · only 1 · shift -2,2",
    ),
    controls: int = typer.Option(
        5, "--controls", help="random-axis controls (orthogonal to the entropy axis; at most 1000)"
    ),
    n_per_k: int = typer.Option(20, "--n-per-k", help="SULA prompts per k (k = 0,1,2,4,8; at most 1000)"),
    labels: Optional[str] = LabelsOpt,
    first_token: bool = FirstTokenOpt,
    n_resamples: int = ResamplesOpt,
    batch_size: int = BatchOpt,
    seed: int = SeedOpt,
) -> None:
    """Edit the entropy-aligned value axis during SULA; compare with matched random axes (geometry and behaviour)."""
    lay = number_list(layers, "--layers", example="0,-1")
    strengths = number_list(strength, "--strength", cast=float, example="0.5,1,2")
    config = InterventionConfig(
        experiments=None if lay is None else (lay,),
        op=op,  # type: ignore[arg-type]
        strengths=strengths,
        n_controls=controls,
        n_per_k=n_per_k,
        batch_size=batch_size,
        n_resamples=n_resamples,
        seed=seed,
        first_token=first_token,
        **({} if labels is None else {"labels": label_pair(labels)}),
    )
    launch(EXPERIMENT, config, load, output)


@prints(InterventionResult)
def print_intervene(result: Any, reporter: Any = None) -> None:
    if result.verdict is not None:
        out.print(result.verdict.line, soft_wrap=True, markup=False)
    table = Table(
        title=f"{result.model}: {result.op} along the entropy axis vs {result.config['n_controls']} random axes"
    )
    keep = ("layers", "strength", "metric", "entropy axis", "random axes mean ± sd")
    for col in keep:
        table.add_column(col)
    for r in result.summary():
        if r["metric"] in ("axis_entropy_rho", "sula_mae_posterior", "sula_mae", "kl"):
            table.add_row(*(str(r[c]) for c in keep))
    out.print(table)
    for note in result.config.get("notes", ()):
        out.print(f"note: {note}", soft_wrap=True, markup=False, highlight=False)
