"""``geoprobe scan``: the Bayesian-geometry signatures on every layer → report.html, results.json, capture/
(geoprobe.scan.experiment runs it; a scan resumes from ``<run>/capture.partial``)."""

from __future__ import annotations

from typing import Any, Optional

import typer
from rich.table import Table

from geoprobe.cli.app import app, out
from geoprobe.cli.common import launch, prints
from geoprobe.cli.options import (
    BATCH_HELP,
    EXECUTOR,
    LOAD,
    MAX_TOKENS_HELP,
    OUTPUT,
    LayersOpt,
    OptionalSeedOpt,
    OutputOptions,
    layers,
    takes,
)
from geoprobe.errors import GeoprobeError
from geoprobe.models.loading import LoadOptions
from geoprobe.scan.config import ScanConfig
from geoprobe.scan.experiment import EXPERIMENT
from geoprobe.scan.result import ScanResult

PromptsOpt = typer.Option(
    None,
    "--prompts",
    "-p",
    help="mixed (default: real text from every domain, stratified by next-token entropy), a "
    "domain (geoprobe prompts lists them), builtin (160 hand-written), or a prompt file",
)
DomainOpt = typer.Option(None, "--domain", help="a single corpus domain (same as --prompts DOMAIN)")
CandidatesOpt = typer.Option(
    None, "--candidates", help="corpus sets: candidate pool size (default 1000, at most 100000)"
)
PerQuintileOpt = typer.Option(
    None, "--per-quintile", help="corpus sets: prompts drawn per entropy quintile (default 15, at most 20000)"
)
MinTokOpt = typer.Option(
    None, "--min-tokens", help="corpus sets: shortest candidate in tokens (default 16, at most 4096)"
)
MaxTokOpt = typer.Option(
    None, "--max-prompt-tokens", help="corpus sets: longest candidate in tokens (default 64, at most 4096)"
)
ScatterOpt = typer.Option(None, "--scatter-layers", help="extra layers for value-manifold scatter plots")
NullOpt = typer.Option(None, "--null", help="matched null for the value manifold: gaussian (default) or permute")
CiOpt = typer.Option(
    None, "--ci-layers", help="bootstrap CIs of PCA/correlations: final (default, + scatter layers) or all"
)
MaxTokensOpt = typer.Option(None, "--max-tokens", help=MAX_TOKENS_HELP)
OptionalBatchOpt = typer.Option(None, "--batch-size", help=BATCH_HELP)
NoInitOpt = typer.Option(
    False, "--no-init-baseline", help="skip the random-init null (then no criterion can pass: docs/scan.md)"
)
InitDrawsOpt = typer.Option(
    None, "--init-draws", help="random-init draws of the architecture for the scorecard's null (default 3, 0 to 20)"
)
BaselineOpt = typer.Option(
    None, "--baseline", help="the model's own initialisation (a step-0 checkpoint) as the null, instead of draws"
)


def prompt_choice(prompts: Optional[str], domain: Optional[str]) -> Optional[str]:
    """``--prompts`` or ``--domain`` (not two different ones)."""
    if prompts is not None and domain is not None and prompts != domain:
        raise GeoprobeError(f"--prompts {prompts!r} and --domain {domain!r} disagree; pass only one of them")
    if domain is not None:
        from geoprobe.sampling import check_corpus_set

        check_corpus_set(domain)
        return domain
    return prompts


def parsed_flags(values: dict[str, Any]) -> dict[str, Any]:
    """The scan flags as the experiments read them (geoprobe.scan.experiment.with_flags): ``--prompts`` and
    ``--domain`` reconciled, ``--layers`` and ``--scatter-layers`` as tuples (``--layers all``: None)."""
    v = dict(values)
    if "prompts" in v or "domain" in v:
        v["prompts"] = prompt_choice(v.get("prompts"), v.get("domain"))
    if v.get("layer_spec") is not None:
        v["layer_spec"] = layers(v["layer_spec"])
    if v.get("scatter_layers") is not None:
        v["scatter_layers"] = layers(v["scatter_layers"], "--scatter-layers") or ()
    return v


@app.command()
@takes(LOAD, OUTPUT, EXECUTOR)
def scan(
    load: LoadOptions,
    output: OutputOptions,
    executor: Any,
    prompts: Optional[str] = PromptsOpt,
    domain: Optional[str] = DomainOpt,
    candidates: Optional[int] = CandidatesOpt,
    per_quintile: Optional[int] = PerQuintileOpt,
    min_tokens: Optional[int] = MinTokOpt,
    max_prompt_tokens: Optional[int] = MaxTokOpt,
    layer_spec: Optional[str] = LayersOpt,
    batch_size: Optional[int] = OptionalBatchOpt,
    max_tokens: Optional[int] = MaxTokensOpt,
    scatter_layers: Optional[str] = ScatterOpt,
    no_init_baseline: bool = NoInitOpt,
    init_draws: Optional[int] = InitDrawsOpt,
    baseline: Optional[str] = BaselineOpt,
    null_kind: Optional[str] = NullOpt,
    ci_layers: Optional[str] = CiOpt,
    seed: Optional[int] = OptionalSeedOpt,
) -> None:
    """Measure the Bayesian-geometry signatures on every layer; write report.html and results.json."""
    flags = {k: v for k, v in locals().items() if k not in ("load", "output", "executor")}
    config = EXPERIMENT.with_flags(ScanConfig(), parsed_flags(flags))
    if executor is None:
        launch(EXPERIMENT, config, load, output)
    else:  # the capture's batches on Ray workers (geoprobe.capture.parallel), the rest here
        parallel_scan(config, load, output, executor)


def parallel_scan(config: ScanConfig, load: LoadOptions, output: OutputOptions, executor: Any) -> Any:
    """The scan of ``EXPERIMENT.run``, its capture placed on Ray workers by ``executor`` (a DataParallel)."""
    from geoprobe.capture.shard_worker import WorkerTally
    from geoprobe.cli.common import reporting
    from geoprobe.scan.experiment import execute

    model = EXPERIMENT.load_options(load)
    tally = WorkerTally()
    capture_with = executor.bind(model, tally)  # checks the loading flags first
    with reporting() as reporter:
        result = execute(config, model, output, reporter, capture_with=capture_with)
        reporter.note(f"captured on {tally}")
    return result


@prints(ScanResult)
def print_scan(result: Any, reporter: Any = None) -> None:
    """The per-layer table and the scorecard on stdout."""
    m, a, o, f = result.manifold, result.alignment, result.orthogonality, result.focusing
    ident = getattr(result, "identifiability", None)
    ps = result.prompt_set or {}
    table = Table(
        title=f"{result.model}: final-token geometry over {result.n_prompts} prompts "
        f"(set {ps.get('name', result.config.prompts)}, sha256 {str(ps.get('hash', ''))[:12]})"
    )
    cols = (
        ["layer"]
        + (["value PC1", "null PC1 ≤"] if m else [])
        + (["ρ(PC1, H)"] if a else [])
        + (["key |cos|"] if o else [])
        + (["attn H (bits)"] if f else [])
    )
    for c in cols:
        table.add_column(c, justify="right")
    for i, layer in enumerate(result.layers):
        row = [str(layer)]
        if m:
            row += [f"{m.pc1[i].value:.3f}", f"{m.null[i].pc1.high:.3f}"]
        if a:
            named = ident is None or ident.of(layer)  # no entropy-axis claim for a PC1 that is not identifiable
            row += [f"{a.spearman[i].value:.2f}" if named else f"PC1 n.i. ({a.spearman[i].value:.2f})"]
        if o:
            row += [f"{o.layer_mean[i]:.3f}"]
        if f:
            row += [f"{f.mean[i].value:.2f}"]
        table.add_row(*row)
    out.print(table)
    for layer in ident.layers if ident is not None else ():
        if note := ident.note(layer):
            out.print(f"layer {layer}: {note}", highlight=False)
    for r, c in zip(result.scorecard.rows(), result.scorecard.criteria):
        out.print(
            f"{'PASS' if c.passes else 'fail'}  {r['criterion']}: {r['value']} ({r['ci']}); "
            + (f"threshold {r['threshold']}; vs random init {r['vs_init']}; " if "threshold" in r else "")
            + f"beats null: {r['beats_null']}",
            highlight=False,
        )
