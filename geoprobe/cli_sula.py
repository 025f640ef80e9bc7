"""`geoprobe sula` (the SULA in-context Bayesian-updating task, arXiv 2512.23752 §4.3, §5.2) and
`geoprobe intervene` (entropy-axis interventions, §4.5–4.6, §6.2).

Registered on :data:`geoprobe.cli.app`; errors follow the CLI's rule (one line, exit 2)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from geoprobe.cli import (BatchOpt, DeviceOpt, DtypeOpt, FiguresOpt, ForceOpt, ModelOpt, OutOpt, ResamplesOpt, SeedOpt,
                          _open, app, check_figures, claim_run_dir, model_run_dir, out, stage_progress, write_figures)
from geoprobe.errors import GeoprobeError


@app.command()
def sula(
    model: str = ModelOpt,
    k: Optional[str] = typer.Option(None, "--k", help="comma-separated numbers of in-context examples (default 0,1,2,4,8)"),
    n_per_k: int = typer.Option(50, "--n-per-k", help="prompts per k (the authors' pipeline: 50)"),
    agreement: float = typer.Option(0.9, "--agreement", help="probability that an example's label agrees with the class"),
    labels: Optional[str] = typer.Option(None, "--labels", help="two single-token labels, e.g. bip,pim"),
    first_token: bool = typer.Option(False, "--first-token", help="score multi-token labels by their first token"),
    layer: int = typer.Option(-1, "--layer", help="layer of the value geometry (default final)"),
    batch_size: int = BatchOpt,
    n_resamples: int = ResamplesOpt,
    dtype: str = DtypeOpt,
    device: str = DeviceOpt,
    out_dir: Optional[Path] = OutOpt,
    seed: int = SeedOpt,
    force: bool = ForceOpt,
    figures: Optional[str] = FiguresOpt,
) -> None:
    """SULA: the model's label entropy against the exact Bayesian posterior, with controls and value geometry."""
    from dataclasses import replace

    from geoprobe.sula import SulaConfig

    target = claim_run_dir(out_dir or model_run_dir(model, "-sula"), ("sula.json", "sula.html"), force)
    figures = check_figures(figures, target, force)
    config = SulaConfig(n_per_k=n_per_k, agreement=agreement, first_token=first_token, batch_size=batch_size,
                        n_resamples=n_resamples, seed=seed)
    if k is not None:
        try:
            ks = tuple(int(x) for x in k.split(",") if x.strip())
        except ValueError:
            raise GeoprobeError(f"--k {k!r} is not a comma-separated list of integers (e.g. 0,1,2,4,8)") from None
        config = replace(config, k_values=ks)
    if labels is not None:
        pair = tuple(x.strip() for x in labels.split(",") if x.strip())
        if len(pair) != 2 or pair[0] == pair[1]:
            raise GeoprobeError(f"--labels {labels!r} must be two different labels separated by a comma, e.g. bip,pim")
        config = replace(config, labels=pair)
    _run_sula(model, config, dict(dtype=dtype, device=device), target, layer, figures, force)


def _run_sula(model: str, config, load_options: dict, target: Path, layer: int = -1, figures: Optional[str] = None,
              force: bool = False) -> None:
    from geoprobe.report.sula import summary_rows, write_sula_report
    from geoprobe.sula import run_sula

    m = _open(model, load_options)
    with stage_progress() as progress:
        result = run_sula(m, config, layer=layer, progress=progress)
    result.save(target / "sula.json")
    report = write_sula_report(result, target / "sula.html", force=True)  # existence was checked first
    rows = summary_rows(result)
    table = Table(title=f"{result.model}: SULA, layer {result.layer} (paper, Pythia-410M: MAE 0.44 bits, ρ(k, PC1) 0.86)")
    keep = ("condition", "MAE (bits)", "Spearman ρ(model H, Bayes H)", "label mass", "ρ(k, mean PC1)")
    for col in keep:
        table.add_column(col, no_wrap=col == "condition")
    for r in rows:
        table.add_row(*(r[c] for c in keep))
    out.print(table)
    out.print(f"wrote {report} and {target / 'sula.json'}")
    write_figures(result, target, figures, force)


@app.command()
def intervene(
    model: str = ModelOpt,
    layers: Optional[str] = typer.Option(None, "--layers", help="layers edited together, e.g. 12 or 8,12,16 (default: "
                                         "the paper's 12 | 23 | 8,12,16,20,23 of 24, at the same relative depth)"),
    op: str = typer.Option("cut", "--op", help="cut (remove λ of the axis component) | only (keep the axis component) | "
                           "shift (move by k·σ along the axis)"),
    strength: Optional[str] = typer.Option(None, "--strength", help="comma-separated strengths (dose–response); cut/only "
                                           "in [0, 1]; default cut 0.25,0.5,1 · only 1 · shift -2,2"),
    controls: int = typer.Option(5, "--controls", help="random-axis controls (orthogonal to the entropy axis)"),
    n_per_k: int = typer.Option(20, "--n-per-k", help="SULA prompts per k (k = 0,1,2,4,8)"),
    n_resamples: int = ResamplesOpt,
    batch_size: int = BatchOpt,
    dtype: str = DtypeOpt,
    device: str = DeviceOpt,
    out_dir: Optional[Path] = OutOpt,
    seed: int = SeedOpt,
    force: bool = ForceOpt,
    figures: Optional[str] = FiguresOpt,
) -> None:
    """Edit the entropy-aligned value axis during SULA; compare with matched random axes (geometry and behaviour)."""
    from geoprobe.intervene.experiment import InterventionConfig

    target = claim_run_dir(out_dir or model_run_dir(model, "-intervene"), ("intervene.json", "intervene.html"), force)
    figures = check_figures(figures, target, force)

    def numbers(text: Optional[str], flag: str, cast: type) -> Optional[tuple]:
        if text is None:
            return None
        try:
            return tuple(cast(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise GeoprobeError(f"{flag} {text!r} is not a comma-separated list of numbers") from None

    lay = numbers(layers, "--layers", int)
    config = InterventionConfig(experiments=None if lay is None else (lay,), op=op,  # type: ignore[arg-type]
                                strengths=numbers(strength, "--strength", float), n_controls=controls,
                                n_per_k=n_per_k, batch_size=batch_size, n_resamples=n_resamples, seed=seed)
    _run_intervene(model, config, dict(dtype=dtype, device=device), target, figures, force)


def _run_intervene(model: str, config, load_options: dict, target: Path, figures: Optional[str] = None,
                   force: bool = False) -> None:
    from geoprobe.intervene.experiment import run_interventions
    from geoprobe.report.intervene import write_intervene_report

    m = _open(model, load_options)
    if config.experiments is not None:
        from geoprobe.intervene.ops import resolve_layer

        for x in (x for e in config.experiments for x in e):
            resolve_layer(x, m.layout.n_layers)  # names the valid range before any work
    with stage_progress(width=16) as progress:
        result = run_interventions(m, config, progress=progress)
    result.save(target / "intervene.json")
    report = write_intervene_report(result, target / "intervene.html", force=True)  # existence checked first
    table = Table(title=f"{result.model}: {result.op} along the entropy axis vs {config.n_controls} random axes")
    keep = ("layers", "strength", "metric", "entropy axis", "random axes mean ± sd")
    for col in keep:
        table.add_column(col)
    for r in result.summary():
        if r["metric"] in ("axis_entropy_rho", "sula_mae", "kl"):
            table.add_row(*(str(r[c]) for c in keep))
    out.print(table)
    out.print(f"wrote {report} and {target / 'intervene.json'}")
    write_figures(result, target, figures, force)


def run_recipe(probe, model: str, load_options: dict, out_dir: Optional[Path], force: bool, seed: Optional[int],
               figures: Optional[str] = None) -> None:
    """``geoprobe run probes/sula.toml`` / ``probes/intervene.toml``: the recipe's config, --seed overriding."""
    from dataclasses import replace

    name = "sula" if probe.command == "sula" else "intervene"
    target = claim_run_dir(out_dir or model_run_dir(model, f"-{name}"), (f"{name}.json", f"{name}.html"), force)
    figures = check_figures(figures, target, force)
    config = probe.config if seed is None else replace(probe.config, seed=seed)
    if name == "sula":
        _run_sula(model, config, load_options, target, figures=figures, force=force)
    else:
        _run_intervene(model, config, load_options, target, figures, force)
