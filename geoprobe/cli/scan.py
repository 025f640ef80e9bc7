"""``geoprobe scan``: the Bayesian-geometry signatures on every layer → report.html, results.json, capture/.

A scan resumes: every finished capture batch is kept in ``<run>/capture.partial`` and the same
command after a kill or Ctrl-C loads them instead of recomputing (see geoprobe.capture.checkpoint)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from geoprobe.cli.app import app, err, out
from geoprobe.cli.common import execute_run, open_model, say_prompts_read
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
    model_run_dir,
    takes,
)
from geoprobe.cli.progress import stage_progress
from geoprobe.errors import GeoprobeError
from geoprobe.models.loading import LoadOptions
from geoprobe.rundir import RunOutputs, check_capture_dir
from geoprobe.scan.result import ScanResult

OUTPUTS = RunOutputs.of(ScanResult, data={"capture": check_capture_dir}, partial="capture.partial")

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
NoInitOpt = typer.Option(False, "--no-init-baseline", help="skip the random-init W_K baseline")


def sampling_changes(
    candidates: Optional[int], per_quintile: Optional[int], min_tokens: Optional[int], max_prompt_tokens: Optional[int]
) -> dict[str, Optional[int]]:
    """The SamplingConfig fields the corpus-sampling flags set (None: not given)."""
    return dict(candidates=candidates, per_stratum=per_quintile, min_tokens=min_tokens, max_tokens=max_prompt_tokens)


def prompt_choice(prompts: Optional[str], domain: Optional[str]) -> Optional[str]:
    """``--prompts`` or ``--domain`` (not two different ones)."""
    if prompts is not None and domain is not None and prompts != domain:
        raise GeoprobeError(f"--prompts {prompts!r} and --domain {domain!r} disagree; pass only one of them")
    if domain is not None:
        from geoprobe.sampling import check_corpus_set

        check_corpus_set(domain)
        return domain
    return prompts


def scan_changes(
    prompts: Optional[str] = None,
    layer_spec: Optional[str] = None,
    batch_size: Optional[int] = None,
    max_tokens: Optional[int] = None,
    seed: Optional[int] = None,
    scatter: Optional[str] = None,
    no_init: bool = False,
    null_kind: Optional[str] = None,
    ci_layers: Optional[str] = None,
    sampling: Optional[dict] = None,
) -> dict[str, Any]:
    """ScanConfig changes from the scan flags (None: not given)."""
    changes: dict = dict(
        batch_size=batch_size,
        max_tokens=max_tokens,
        seed=seed,
        null_kind=null_kind,
        ci_layers=ci_layers,
        sampling=sampling,
    )
    if prompts is not None:
        from geoprobe.prompts import prompt_source_kind

        changes["prompts"] = str(Path(prompts)) if prompt_source_kind(prompts) == "file" else prompts
    if layer_spec is not None:
        changes["layers"] = layers(layer_spec)
    if scatter is not None:
        changes["scatter_layers"] = layers(scatter, "--scatter-layers") or ()
    if no_init:
        changes["init_baseline"] = False
    return changes


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
    null_kind: Optional[str] = NullOpt,
    ci_layers: Optional[str] = CiOpt,
    seed: Optional[int] = OptionalSeedOpt,
) -> None:
    """Measure the Bayesian-geometry signatures on every layer; write report.html and results.json."""
    from geoprobe.scan import ScanConfig

    config = ScanConfig().updated(
        **scan_changes(
            prompt_choice(prompts, domain),
            layer_spec,
            batch_size,
            max_tokens,
            seed,
            scatter_layers,
            no_init_baseline,
            null_kind,
            ci_layers,
            sampling_changes(candidates, per_quintile, min_tokens, max_prompt_tokens),
        )
    )
    execute_scan(load, config, output, executor)


def scan_request(load: LoadOptions, config: Any) -> dict[str, Any]:
    """What fixes a scan's numbers, before the model loads: command, model and loading, settings, and
    the prompt file's contents when the prompts come from a file."""
    from geoprobe.prompts import prompt_source_kind, read_prompts
    from geoprobe.provenance import prompts_hash

    from_file = prompt_source_kind(config.prompts) == "file"
    return {
        "command": "scan",
        "load": dataclasses.asdict(load),
        "config": config.to_dict(),
        "prompts_sha256": prompts_hash(read_prompts(config.prompts)) if from_file else None,
    }


def execute_scan(load: LoadOptions, config: Any, output: OutputOptions, executor: Any = None) -> Any:
    """Scan ``load.model`` with ``config`` into ``output.out`` (default runs/<model>): capture/, results.json,
    report.html (and figures); resumes a stopped scan (with either executor), finishes one stopped between
    its writes. ``executor``: None (capture here) or a DataParallel (capture on Ray workers)."""
    from geoprobe.capture import checkpoint
    from geoprobe.capture.shard_worker import WorkerTally
    from geoprobe.scan.run import check_prompts

    tally = None if executor is None else WorkerTally()
    capture_with = None if executor is None else executor.bind(load, tally)  # checks the loading flags first
    target = output.out or model_run_dir(load.model)
    read = check_prompts(config)  # bad prompts fail before the model loads
    if read is not None:
        say_prompts_read(config.prompts, read)
    partial = target / checkpoint.PARTIAL_DIR

    def before(run: Any) -> None:
        if output.force and partial.exists():
            checkpoint.discard(partial)

    def compute(run: Any) -> Any:
        result, cap = _scan(load, config, partial, capture_with)
        if tally is not None:
            err.print(f"captured on {tally}", highlight=False)
        cap.save(target / "capture", overwrite=True)  # checked when the run directory was claimed
        return dataclasses.replace(result, capture_dir="capture")

    result = execute_run(target, OUTPUTS, scan_request(load, config), output, compute, print_scan, before=before)
    if partial.exists():
        checkpoint.discard(partial)
    return result


#: the scan's progress bars: its own stages, and one bar for the analyses (labelled by the current one)
SCAN_LABELS = {"capture": "capturing", "sampling": "entropy of candidates", "tokenize": "tokenising"}


def _scan(load: LoadOptions, config: Any, partial: Path, capture_with: Any = None) -> Any:
    from geoprobe.scan.run import scan

    m = open_model(load)
    with stage_progress(SCAN_LABELS, width=14, group=lambda s: s if s in SCAN_LABELS else "analyse") as progress:

        def on_resume(loaded: int, total: int, where: Path) -> None:
            err.print(
                f"resuming: {loaded} of {total} batches already captured in {where}", highlight=False, soft_wrap=True
            )

        return scan(
            m,
            None,
            config,
            progress=progress,
            return_capture=True,
            checkpoint_dir=partial,
            on_resume=on_resume,
            capture_with=capture_with,
        )


def print_scan(result: Any) -> None:
    """The per-layer table and the scorecard on stdout."""
    m, a, o, f = result.manifold, result.alignment, result.orthogonality, result.focusing
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
            row += [f"{a.spearman[i].value:.2f}"]
        if o:
            row += [f"{o.layer_mean[i]:.3f}"]
        if f:
            row += [f"{f.mean[i].value:.2f}"]
        table.add_row(*row)
    out.print(table)
    for r, c in zip(result.scorecard.rows(), result.scorecard.criteria):
        out.print(
            f"{'PASS' if c.passes else 'fail'}  {r['criterion']}: {r['value']} ({r['ci']}); "
            f"beats null: {r['beats_null']}",
            highlight=False,
        )
