"""``geoprobe sula``: the SULA in-context Bayesian-updating task (arXiv 2512.23752 §4.3, §5.2);
geoprobe.sula.experiment runs it."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import typer
from rich.table import Table

from geoprobe.cli.app import app, out
from geoprobe.cli.common import launch, prints
from geoprobe.cli.options import LOAD, OUTPUT, BatchOpt, OutputOptions, ResamplesOpt, SeedOpt, takes
from geoprobe.errors import GeoprobeError
from geoprobe.models.loading import LoadOptions
from geoprobe.sula.config import DEFAULT_MIN_LABEL_MASS
from geoprobe.sula.experiment import EXPERIMENT
from geoprobe.sula.result import SulaResult

LabelsOpt = typer.Option(None, "--labels", help="two single-token labels, e.g. bip,pim (default bip,pim)")
FirstTokenOpt = typer.Option(False, "--first-token", help="score multi-token labels by their first token")


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
        layer=layer,
    )
    if k is not None:
        try:
            ks = tuple(int(x) for x in k.split(",") if x.strip())
        except ValueError:
            raise GeoprobeError(f"--k {k!r} is not a comma-separated list of integers (e.g. 0,1,2,4,8)") from None
        config = dataclasses.replace(config, k_values=ks)
    if labels is not None:
        config = dataclasses.replace(config, labels=label_pair(labels))
    launch(EXPERIMENT, config, load, output)


def _contrast(kc: Any) -> tuple[Any, str | None]:
    return (None, None) if kc is None else (kc.difference, kc.note)


def label_pair(labels: str) -> tuple[str, str]:
    """``--labels bip,pim`` as a pair; a one-line error unless it is two different labels."""
    pair = tuple(x.strip() for x in labels.split(",") if x.strip())
    if len(pair) != 2 or pair[0] == pair[1]:
        raise GeoprobeError(f"--labels {labels!r} must be two different labels separated by a comma, e.g. bip,pim")
    return pair[0], pair[1]


@prints(SulaResult)
def print_sula(result: Any, reporter: Any = None) -> None:
    import numpy as np

    from geoprobe.sula.evaluate import POSTERIOR, PREDICTIVE
    from geoprobe.sula.report import FLAGGED, summary_rows
    from geoprobe.sula.tracking import interval_text

    m, tau = result.main, result.config.min_label_mass

    def say(text: str) -> None:
        out.print(text, soft_wrap=True, markup=False, highlight=False)

    if m.flagged:
        say(
            f"main: flagged, mean label mass {m.metrics.label_mass.value:.2g} < {tau:g} (--min-label-mass): the model "
            "does not read the prompts as a labelling task, so no SULA MAE is reported (docs/sula.md)"
        )
    elif m.posterior_metrics is not None:  # None only in files from 0.1.0
        post, pred = (interval_text(x.mae, spec=".3f") for x in (m.posterior_metrics, m.metrics))
        if np.any(m.low_mass):  # the paper's number is over every prompt: say that this one is not
            say(
                f"main: SULA MAE {post} bits against the {POSTERIOR} (the paper's target), {pred} against the "
                f"{PREDICTIVE}, over the {m.metrics.n} of {m.n} prompts with label mass ≥ {tau:g} (Pythia-410M's "
                "0.44 is over every prompt: --min-label-mass 0 scores them all)"
            )
        else:
            say(
                f"main: SULA MAE {post} bits against the {POSTERIOR} (the paper's target; Pythia-410M 0.44), "
                f"{pred} against the {PREDICTIVE}"
            )
    table = Table(title=f"{result.model}: SULA, layer {result.layer}")
    rows = {t: summary_rows(result, t) for t in (PREDICTIVE, POSTERIOR)}
    cols = ("condition", "scored", "MAE, posterior H (bits)", "MAE, predictive H (bits)", "Spearman ρ(model H, H)")
    cols += ("label mass",)
    for col in cols:
        table.add_column(col, no_wrap=col == "condition")
    for post, pred in zip(rows[POSTERIOR], rows[PREDICTIVE]):
        cells = [post["MAE (bits)"], pred["MAE (bits)"], pred["Spearman ρ(model H, target)"]]
        table.add_row(
            pred["condition"],
            f"{pred['scored']} of {pred['n']}",
            *(FLAGGED if x.startswith(FLAGGED) else x for x in cells),
            f"{result.conditions[pred['condition']].metrics.label_mass.value:.2g}",
        )
    out.print(table)
    print_k_tracking(result, say)
    if tau is not None:
        left = ", ".join(f"{n} {int(c.low_mass.sum())} of {c.n}" for n, c in result.conditions.items())
        say(f"left out of the calibration metrics, label mass < {tau:g} (--min-label-mass): {left}")
    if result.flagged:
        means = ", ".join(f"{n} {result.conditions[n].metrics.label_mass.value:.2g}" for n in result.flagged)
        say(
            f"{FLAGGED} (mean label mass < {tau:g}; the model does not read these prompts as a labelling task, so "
            f"they are left out of the comparison; docs/sula.md): {means}"
        )


def print_k_tracking(result: Any, say: Any) -> None:
    """Does PC1 follow k: ρ_S(k, PC1) across prompts per condition, main − each control, the reasons
    where there is no interval, and why the paper's ρ(k, PC1) is not set beside it."""
    from geoprobe.sula.report import K_P, K_RHO, OLD_FILE, k_contrast_column, k_tracking_rows

    if result.main.geometry.k_tracking is None:
        say(f"ρ_S(k, PC1) across prompts: {OLD_FILE}; rerun geoprobe sula to compute it")
        return
    rows = k_tracking_rows(result, reason=False)
    contrast = k_contrast_column(result)
    table = Table(title="Does PC1 follow k? Spearman across every prompt (bootstrap over prompts, stratified by k)")
    for col in ("condition", K_RHO, K_P, contrast):
        table.add_column(col, no_wrap=col == "condition")
    for row in rows:
        table.add_row(row["condition"], row[K_RHO], row[K_P], row[contrast])
    out.print(table)
    for name, c in result.conditions.items():
        kt, kc = c.geometry.k_tracking, c.geometry.k_contrast
        for what, est, note in ((f"{name}: ρ_S(k, PC1)", kt.rho, kt.note), (f"main − {name}", *_contrast(kc))):
            if note:  # an undefined value (n/a) or one without an interval: say why
                say(f"{what}: {'no interval' if math.isfinite(est.value) else 'n/a'}: {note}")
    say(
        "the paper's ρ(k, PC1) = 0.86 (Pythia-410M) is not set beside this as the same quantity: how it was "
        "computed is not in the authors' released code, a Spearman ρ over five k would be a multiple of 0.1, its "
        "sign convention is not stated, and it has no interval or control contrast (docs/sula.md)"
    )
