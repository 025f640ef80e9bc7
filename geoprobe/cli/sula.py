"""``geoprobe sula`` (the SULA in-context Bayesian-updating task, arXiv 2512.23752 §4.3, §5.2) and
``geoprobe intervene`` (entropy-axis interventions, §4.5–4.6, §6.2)."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import typer
from rich.table import Table

from geoprobe.cli.app import app, out
from geoprobe.cli.common import execute_run, open_model
from geoprobe.cli.options import (
    LOAD,
    OUTPUT,
    BatchOpt,
    OutputOptions,
    ResamplesOpt,
    SeedOpt,
    model_run_dir,
    number_list,
    takes,
)
from geoprobe.cli.progress import stage_progress
from geoprobe.errors import GeoprobeError
from geoprobe.intervene.result import InterventionResult
from geoprobe.models.loading import LoadOptions
from geoprobe.rundir import RunOutputs
from geoprobe.sula.config import DEFAULT_MIN_LABEL_MASS
from geoprobe.sula.result import SulaResult

LabelsOpt = typer.Option(None, "--labels", help="two single-token labels, e.g. bip,pim (default bip,pim)")
FirstTokenOpt = typer.Option(False, "--first-token", help="score multi-token labels by their first token")
SULA_OUTPUTS = RunOutputs.of(SulaResult)
INTERVENE_OUTPUTS = RunOutputs.of(InterventionResult)


@app.command()
@takes(LOAD, OUTPUT)
def sula(
    load: LoadOptions,
    output: OutputOptions,
    k: Optional[str] = typer.Option(
        None,
        "--k",
        help="comma-separated numbers of in-context examples (default 0,1,2,4,8; each at most 1024, "
        "and at most 20000 prompts in all with --n-per-k)",
    ),
    n_per_k: int = typer.Option(
        50, "--n-per-k", help="prompts per k (the authors' pipeline: 50; at most 20000, over all the values of --k)"
    ),
    agreement: float = typer.Option(
        0.9, "--agreement", help="probability that an example's label agrees with the class"
    ),
    labels: Optional[str] = LabelsOpt,
    first_token: bool = FirstTokenOpt,
    layer: int = typer.Option(-1, "--layer", help="layer of the value geometry (default final)"),
    min_label_mass: float = typer.Option(
        DEFAULT_MIN_LABEL_MASS,
        "--min-label-mass",
        help="prompts whose label mass P(L1)+P(L2) is below this are left out of the calibration metrics, and a "
        "condition whose mean is below it is flagged and left out of the comparison (0 scores every prompt; "
        "docs/sula.md)",
    ),
    batch_size: int = BatchOpt,
    n_resamples: int = ResamplesOpt,
    seed: int = SeedOpt,
) -> None:
    """SULA: the model's label entropy against the exact Bayesian posterior, with controls and value geometry."""
    from geoprobe.sula import SulaConfig

    config = SulaConfig(
        n_per_k=n_per_k,
        agreement=agreement,
        first_token=first_token,
        batch_size=batch_size,
        n_resamples=n_resamples,
        seed=seed,
        min_label_mass=min_label_mass,
    )
    if k is not None:
        try:
            ks = tuple(int(x) for x in k.split(",") if x.strip())
        except ValueError:
            raise GeoprobeError(f"--k {k!r} is not a comma-separated list of integers (e.g. 0,1,2,4,8)") from None
        config = dataclasses.replace(config, k_values=ks)
    if labels is not None:
        config = dataclasses.replace(config, labels=label_pair(labels))
    execute_sula(load, config, output, layer)


def label_pair(labels: str) -> tuple[str, str]:
    """``--labels bip,pim`` as a pair; a one-line error unless it is two different labels."""
    pair = tuple(x.strip() for x in labels.split(",") if x.strip())
    if len(pair) != 2 or pair[0] == pair[1]:
        raise GeoprobeError(f"--labels {labels!r} must be two different labels separated by a comma, e.g. bip,pim")
    return pair[0], pair[1]


def execute_sula(load: LoadOptions, config: Any, output: OutputOptions, layer: int = -1) -> Any:
    """Run SULA on ``load.model``: sula.json and sula.html in the run directory (default runs/<model>-sula)."""
    from geoprobe.sula import run_sula

    target = output.out or model_run_dir(load.model, "-sula")
    request = {
        "command": "sula",
        "load": dataclasses.asdict(load),
        "config": dataclasses.asdict(config),
        "layer": layer,
    }

    def compute(run: Any) -> Any:
        m = open_model(load)
        with stage_progress() as progress:
            return run_sula(m, config, layer=layer, progress=progress)

    return execute_run(target, SULA_OUTPUTS, request, output, compute, _print_sula)


def _print_sula(result: Any) -> None:
    import numpy as np

    from geoprobe.sula.evaluate import POSTERIOR, PREDICTIVE
    from geoprobe.sula.report import FLAGGED, summary_rows

    m, tau = result.main, result.config.min_label_mass

    def say(text: str) -> None:
        out.print(text, soft_wrap=True, markup=False, highlight=False)

    if m.flagged:
        say(
            f"main: flagged, mean label mass {m.metrics.label_mass.value:.2g} < {tau:g} (--min-label-mass): the model "
            "does not read the prompts as a labelling task, so no SULA MAE is reported (docs/sula.md)"
        )
    elif m.posterior_metrics is not None:  # None only in files from 0.1.0
        if np.any(m.low_mass):  # the paper's number is over every prompt: say that this one is not
            say(
                f"main: SULA MAE {m.posterior_metrics.mae:.3f} bits against the {POSTERIOR} (the paper's target), "
                f"{m.metrics.mae:.3f} against the {PREDICTIVE}, over the {m.metrics.n} of {m.n} prompts with label "
                f"mass ≥ {tau:g} (Pythia-410M's 0.44 is over every prompt: --min-label-mass 0 scores them all)"
            )
        else:
            say(
                f"main: SULA MAE {m.posterior_metrics.mae:.3f} bits against the {POSTERIOR} (the paper's target; "
                f"Pythia-410M 0.44), {m.metrics.mae:.3f} against the {PREDICTIVE}"
            )
    table = Table(title=f"{result.model}: SULA, layer {result.layer} (paper, Pythia-410M: ρ(k, PC1) 0.86)")
    rows = {t: summary_rows(result, t) for t in (PREDICTIVE, POSTERIOR)}
    cols = ("condition", "scored", "MAE, posterior H (bits)", "MAE, predictive H (bits)", "Spearman ρ(model H, H)")
    cols += ("label mass", "ρ(k, mean PC1)")
    for col in cols:
        table.add_column(col, no_wrap=col == "condition")
    for post, pred in zip(rows[POSTERIOR], rows[PREDICTIVE]):
        cells = [post["MAE (bits)"], pred["MAE (bits)"], pred["Spearman ρ(model H, target)"]]
        table.add_row(
            pred["condition"],
            f"{pred['scored']} of {pred['n']}",
            *(FLAGGED if x.startswith(FLAGGED) else x for x in cells),
            f"{result.conditions[pred['condition']].metrics.label_mass.value:.2g}",
            pred["ρ(k, mean PC1)"],
        )
    out.print(table)
    if tau is not None:
        left = ", ".join(f"{n} {int(c.low_mass.sum())} of {c.n}" for n, c in result.conditions.items())
        say(f"left out of the calibration metrics, label mass < {tau:g} (--min-label-mass): {left}")
    if result.flagged:
        means = ", ".join(f"{n} {result.conditions[n].metrics.label_mass.value:.2g}" for n in result.flagged)
        say(
            f"{FLAGGED} (mean label mass < {tau:g}; the model does not read these prompts as a labelling task, so "
            f"they are left out of the comparison; docs/sula.md): {means}"
        )


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
    from geoprobe.intervene.config import InterventionConfig

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
    execute_intervene(load, config, output)


def execute_intervene(load: LoadOptions, config: Any, output: OutputOptions) -> Any:
    """Run the interventions on ``load.model``: intervene.json and intervene.html (default runs/<model>-intervene)."""
    from geoprobe.intervene.run import run_interventions

    target = output.out or model_run_dir(load.model, "-intervene")
    request = {"command": "intervene", "load": dataclasses.asdict(load), "config": dataclasses.asdict(config)}

    def compute(run: Any) -> Any:
        m = open_model(load)
        if config.experiments is not None:
            from geoprobe.intervene.ops import resolve_layer

            for x in (x for e in config.experiments for x in e):
                resolve_layer(x, m.layout.n_layers)  # names the valid range before any work
        with stage_progress(width=16) as progress:
            return run_interventions(m, config, progress=progress)

    def show(result: Any) -> None:
        if result.verdict is not None:
            out.print(result.verdict.line, soft_wrap=True, markup=False)
        table = Table(title=f"{result.model}: {result.op} along the entropy axis vs {config.n_controls} random axes")
        keep = ("layers", "strength", "metric", "entropy axis", "random axes mean ± sd")
        for col in keep:
            table.add_column(col)
        for r in result.summary():
            if r["metric"] in ("axis_entropy_rho", "sula_mae_posterior", "sula_mae", "kl"):
                table.add_row(*(str(r[c]) for c in keep))
        out.print(table)
        for note in result.config.get("notes", ()):
            out.print(f"note: {note}", soft_wrap=True, markup=False, highlight=False)

    return execute_run(target, INTERVENE_OUTPUTS, request, output, compute, show)
