"""`geoprobe` command line: models, prompts, sample, capture, scan, run, report, compare-domains, compare, sula, intervene, windtunnel (train|eval|report|run).

Errors the user can fix print one line (``error: ...``) and exit 2; ``--debug`` anywhere on
the command line shows the traceback instead.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import typer
from rich.console import Console
from rich.table import Table

from geoprobe.capture.result import ensure_writable
from geoprobe.errors import GeoprobeError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Measure the Bayesian geometry of attention in pretrained language models.")
out = Console()
err = Console(stderr=True)

ModelOpt = typer.Option("smollm2-135m", "--model", "-m",
                        help="alias (geoprobe models), Hub id, local dir, .gguf file, or twin:ALIAS[:tiny|full]")
DtypeOpt = typer.Option("float32", "--dtype")
DeviceOpt = typer.Option("cpu", "--device")
SeedOpt = typer.Option(0, "--seed")
BatchOpt = typer.Option(16, "--batch-size")
MAX_TOKENS_HELP = ("keep each prompt's final N tokens (default 2048; raise it up to the model's context window, "
                   "which larger values mean; docs/capture.md)")
ResamplesOpt = typer.Option(1000, "--n-resamples")


def model_run_dir(model: str, suffix: str = "") -> Path:
    """The default run directory of ``model``: runs/<model with / and : made path-safe><suffix>."""
    return Path("runs") / (model.replace("/", "--").replace(":", "-") + suffix)


def claim_run_dir(target: Path, outputs: Sequence[str], force: bool) -> Path:
    """``target`` if none of ``outputs`` (names inside it) exists yet, or ``force``; else a one-line
    error naming the first that exists. Checked before any model is loaded or anything written."""
    existing = [target / n for n in outputs if (target / n).exists()]
    if existing and not force:
        raise GeoprobeError(f"{str(existing[0])!r} already exists; pass --force to replace this run or choose another --out")
    return target


def check_figures(fmt: Optional[str], run_dir: Optional[Path] = None, force: bool = False) -> Optional[str]:
    """--figures FMT, checked before any model loads: the format, a Chromium, no figures/*.FMT in run_dir."""
    from geoprobe.report.export import check_figures as check

    return check(fmt, run_dir, force=force)


def write_figures(obj, run_dir: Path, fmt: Optional[str], force: bool) -> None:
    """--figures FMT: every figure of ``obj``'s HTML report as run_dir/figures/<anchor>.FMT (one browser start)."""
    if fmt is None:
        return
    from geoprobe.report.export import export_report_figures

    with err.status(f"writing {fmt} figures …"):
        paths = export_report_figures(obj, run_dir, fmt, force=force)
    out.print(f"wrote {len(paths)} {fmt} figures to {run_dir / 'figures'}")


def _layers(spec: Optional[str], flag: str = "--layers") -> Optional[tuple[int, ...]]:
    if spec is None or spec == "all":
        return None
    try:
        return tuple(int(x) for x in spec.split(",") if x.strip())
    except ValueError:
        raise GeoprobeError(f"{flag} {spec!r} is not a comma-separated list of integers (e.g. 0,12,-1) or 'all'") from None


def int_list(spec: Optional[str], flag: str, *, empty_ok: bool = False) -> Optional[tuple[int, ...]]:
    """Comma-separated integers given to ``flag``; None (flag not given) stays None. An empty list ('', 'none')
    is () where ``empty_ok`` (a sweep to skip), otherwise a one-line error."""
    if spec is None:
        return None
    try:
        vals = () if spec.strip().lower() == "none" else tuple(int(x) for x in spec.split(",") if x.strip())
    except ValueError:
        raise GeoprobeError(f"{flag} {spec!r} is not a comma-separated list of integers; pass e.g. {flag} 16,32,64") from None
    if not vals and not empty_ok:
        raise GeoprobeError(f"{flag} {spec!r} is empty; pass comma-separated integers such as {flag} 16,32,64")
    return vals


def print_rows(title: str, rows: Sequence[dict]) -> None:
    """A rich table on stdout from rows of {column: text} (the columns of the first row)."""
    table = Table(title=title)
    for col in rows[0]:
        table.add_column(col)
    for r in rows:
        table.add_row(*r.values())
    out.print(table)


@contextmanager
def stage_progress(labels: Optional[dict] = None, width: int = 22) -> Iterator[Callable[[str, int, int], None]]:
    """A transient rich progress display on stderr, one bar per stage; yields ``progress(stage, done, total)``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn(f"{{task.description:<{width}}}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        tasks: dict = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task((labels or {}).get(stage, stage), total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield progress


def _open(model: str, load_options: dict):
    from geoprobe.models.loading import load_model

    with err.status(f"loading {model} …"):
        return load_model(model, **load_options)


@app.command()
def models(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """List model aliases: family, attention kind, parameters, weights available here."""
    from geoprobe.models.registry import ALIASES, attention_kind, parameter_count, weights_available

    rows = []
    for spec in ALIASES.values():
        cfg = spec.hf_config_dict()
        rows.append({
            "alias": spec.alias,
            "hf_id": spec.hf_id,
            "family": spec.family,
            "attention": attention_kind(cfg),
            "layers": cfg["num_hidden_layers"],
            "parameters": parameter_count(spec.config),
            "available": weights_available(spec),
            "source": spec.source if spec.source == "hub" else f"offline package {spec.package}",
        })
    if as_json:
        out.print_json(json.dumps(rows))
        return
    table = Table(title="geoprobe models")
    for col in ("alias", "family", "attention", "layers", "params", "weights here", "source"):
        table.add_column(col)
    for r in rows:
        p = r["parameters"]
        size = f"{p / 1e9:.2f}B" if p >= 1e9 else f"{p / 1e6:.0f}M"
        table.add_row(r["alias"], r["family"], r["attention"], str(r["layers"]), size,
                      "yes" if r["available"] else "no", r["hf_id"] if r["source"] == "hub" else r["source"])
    out.print(table)


@app.command()
def capture(
    model: str = ModelOpt,
    prompts: str = typer.Option("builtin", "--prompts", "-p",
                                help="builtin (default), mixed, a corpus domain, or a prompt file (.txt/.jsonl/.json)"),
    out_dir: Path = typer.Option(..., "--out", "-o", help="directory to write (must not exist)"),
    layers: Optional[str] = typer.Option(None, "--layers", help="comma-separated layer indices, negative from the end; default all"),
    batch_size: int = BatchOpt,
    padding_side: str = typer.Option("right", "--padding-side", help="left|right"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help=MAX_TOKENS_HELP),
    attention: str = typer.Option("entropy", "--attention", help="entropy|distribution (keep the final-token rows)"),
    queries: bool = typer.Option(False, "--queries", help="also keep query vectors"),
    attn_out: bool = typer.Option(False, "--attn-out", help="also keep per-head attention outputs"),
    top_k: int = typer.Option(10, "--top-k"),
    revision: Optional[str] = typer.Option(None, "--revision", help="Hub revision, e.g. step0 … step143000 for Pythia"),
    dtype: str = typer.Option("float32", "--dtype", help="float32|bfloat16|float16"),
    device: str = DeviceOpt,
    device_map: Optional[str] = typer.Option(None, "--device-map", help="accelerate device map, e.g. auto"),
    seed: int = SeedOpt,
    overwrite: bool = typer.Option(False, "--overwrite"),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="run model code from the Hub (off by default)"),
    allow_pickle: bool = typer.Option(False, "--allow-pickle", help="accept non-safetensors weights (weights_only load)"),
) -> None:
    """Capture final-token values, keys, attention and next-token distributions to --out."""
    from geoprobe.capture import CaptureConfig

    ensure_writable(out_dir, overwrite)
    config = CaptureConfig(layers=_layers(layers), queries=queries, attn_out=attn_out, attention=attention,
                           top_k=top_k, batch_size=batch_size, padding_side=padding_side,
                           **({} if max_tokens is None else {"max_tokens": max_tokens}))
    load_options = dict(revision=revision, dtype=dtype, device=device, device_map=device_map,
                        trust_remote_code=trust_remote_code, allow_pickle=allow_pickle)
    cap = _run_capture(model, load_options, prompts, config, out_dir, seed, overwrite)
    out.print(f"wrote {out_dir} ({cap.n_prompts} prompts × {len(cap.layers)} layers)")


def _run_capture(model: str, load_options: dict, prompts: str, config, out_dir: Path, seed: int,
                 overwrite: bool):
    """Resolve prompts (a set or a file), load the model, capture with progress, save to ``out_dir``."""
    from rich.progress import Progress

    from geoprobe.capture import capture as run
    from geoprobe.prompts import prompt_source_kind, read_prompts, resolve_prompt_set

    if prompt_source_kind(prompts) == "file":
        read_prompts(prompts)  # a bad file fails before the model loads
    m = _open(model, load_options)
    with err.status(f"resolving prompts {prompts} …"):
        pset = resolve_prompt_set(prompts, m, seed=seed)
    texts = list(pset.prompts)

    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("capturing", total=len(texts))
        cap = run(m, texts, config, seed=seed, progress=lambda done, total: bar.update(task, completed=done))
    cap = dataclasses.replace(cap, extra={**cap.extra, "prompt_set": pset.record()})  # which set, hash, seed
    cap.save(out_dir, overwrite=overwrite)
    return cap


def _prompt_choice(prompts: Optional[str], domain: Optional[str]) -> Optional[str]:
    if prompts is not None and domain is not None and prompts != domain:
        raise GeoprobeError(f"--prompts {prompts!r} and --domain {domain!r} disagree; pass only one of them")
    if domain is not None:
        from geoprobe.sampling import check_corpus_set

        check_corpus_set(domain)
        return domain
    return prompts


def _scan_options(prompts: Optional[str], layers: Optional[str], batch_size: Optional[int],
                  max_tokens: Optional[int], seed: Optional[int], scatter: Optional[str], no_init: bool,
                  null_kind: Optional[str] = None, ci_layers: Optional[str] = None, sampling: Optional[dict] = None) -> dict:
    changes: dict = dict(batch_size=batch_size, max_tokens=max_tokens, seed=seed, null_kind=null_kind,
                         ci_layers=ci_layers, sampling=sampling)
    if prompts is not None:
        from geoprobe.prompts import prompt_source_kind

        changes["prompts"] = str(Path(prompts)) if prompt_source_kind(prompts) == "file" else prompts
    if layers is not None:
        changes["layers"] = _layers(layers) or None
    if scatter is not None:
        changes["scatter_layers"] = _layers(scatter, "--scatter-layers") or ()
    if no_init:
        changes["init_baseline"] = False
    return changes


def _run_scan(model: str, config, load_options: dict, out_dir: Optional[Path], force: bool,
              figures: Optional[str] = None) -> None:
    """Scan ``model`` and write capture/, results.json and report.html under the run directory."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from geoprobe.capture import checkpoint
    from geoprobe.scan.run import check_prompts, scan

    target = out_dir or model_run_dir(model)
    partial = target / checkpoint.PARTIAL_DIR
    # an unfinished scan (checkpoint, no results.json) is resumed by the same command; --force discards it
    resuming = partial.is_dir() and not (target / "results.json").exists() and not force
    if not resuming:
        claim_run_dir(target, ("report.html", "results.json", "capture"), force)
    check_prompts(config)  # fail on bad prompts before loading the model
    figures = check_figures(figures, target, force)
    if force and partial.exists():
        checkpoint.discard(partial)
    m = _open(model, load_options)
    columns = (TextColumn("{task.description:<14}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        tasks: dict = {}

        def progress(stage: str, done: int, total: int) -> None:
            key = stage if stage in ("capture", "sampling") else "analyse"
            label = {"capture": "capturing", "sampling": "entropy of candidates"}.get(key, stage)
            if key not in tasks:
                tasks[key] = bar.add_task(label, total=total)
            bar.update(tasks[key], completed=done, description=label)

        def on_resume(loaded: int, total: int, where: Path) -> None:
            err.print(f"resuming: {loaded} of {total} batches already captured in {where}", highlight=False,
                      soft_wrap=True)

        result, cap = scan(m, None, config, progress=progress, return_capture=True, checkpoint_dir=partial,
                           on_resume=on_resume)
    cap.save(target / "capture", overwrite=force or resuming)  # a resumed run may have saved capture/ already
    result = dataclasses.replace(result, capture_dir="capture")
    results_path = result.save(target / "results.json")
    report_path = result.report(target / "report.html", force=True)  # existence was checked before any work
    write_figures(result, target, figures, force)
    checkpoint.discard(partial)
    _print_scan(result)
    out.print(f"wrote {report_path}, {results_path} and {target / 'capture'}")


def _print_scan(result) -> None:
    m, a, o, f = result.manifold, result.alignment, result.orthogonality, result.focusing
    ps = result.prompt_set or {}
    table = Table(title=f"{result.model}: final-token geometry over {result.n_prompts} prompts "
                        f"(set {ps.get('name', result.config.prompts)}, sha256 {str(ps.get('hash', ''))[:12]})")
    cols = ["layer"] + (["value PC1", "null PC1 ≤"] if m else []) + (["ρ(PC1, H)"] if a else []) \
        + (["key |cos|"] if o else []) + (["attn H (bits)"] if f else [])
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
        out.print(f"{'PASS' if c.passes else 'fail'}  {r['criterion']}: {r['value']} ({r['ci']}); "
                  f"beats null: {r['beats_null']}", highlight=False)


PromptsOpt = typer.Option(None, "--prompts", "-p",
                          help="mixed (default: real text from every domain, stratified by next-token entropy), a "
                               "domain (geoprobe prompts lists them), builtin (160 hand-written), or a prompt file")
DomainOpt = typer.Option(None, "--domain", help="a single corpus domain (same as --prompts DOMAIN)")
CandidatesOpt = typer.Option(None, "--candidates", help="corpus sets: candidate pool size (default 1000)")
PerQuintileOpt = typer.Option(None, "--per-quintile", help="corpus sets: prompts drawn per entropy quintile (default 15)")
MinTokOpt = typer.Option(None, "--min-tokens", help="corpus sets: shortest candidate in tokens (default 16)")
MaxTokOpt = typer.Option(None, "--max-prompt-tokens", help="corpus sets: longest candidate in tokens (default 64)")


def _sampling(candidates, per_quintile, min_tokens, max_prompt_tokens) -> dict:
    return dict(candidates=candidates, per_stratum=per_quintile, min_tokens=min_tokens, max_tokens=max_prompt_tokens)
LayersOpt = typer.Option(None, "--layers", help="comma-separated layer indices (negative from the end) or all")
ScatterOpt = typer.Option(None, "--scatter-layers", help="extra layers for value-manifold scatter plots")
OutOpt = typer.Option(None, "--out", "-o", help="run directory; default runs/<model>")
ForceOpt = typer.Option(False, "--force", "--overwrite", help="replace an existing report/results in --out")
NullOpt = typer.Option(None, "--null", help="matched null for the value manifold: gaussian (default) or permute")
CiOpt = typer.Option(None, "--ci-layers", help="bootstrap CIs of PCA/correlations: final (default, + scatter layers) or all")
FiguresOpt = typer.Option(None, "--figures", help="also write each report figure as png|svg|pdf to <run dir>/figures/ "
                                                  "(kaleido + Chromium)")


@app.command()
def scan(
    model: str = ModelOpt,
    prompts: Optional[str] = PromptsOpt,
    domain: Optional[str] = DomainOpt,
    candidates: Optional[int] = CandidatesOpt,
    per_quintile: Optional[int] = PerQuintileOpt,
    min_tokens: Optional[int] = MinTokOpt,
    max_prompt_tokens: Optional[int] = MaxTokOpt,
    layers: Optional[str] = LayersOpt,
    batch_size: Optional[int] = typer.Option(None, "--batch-size"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help=MAX_TOKENS_HELP),
    scatter_layers: Optional[str] = ScatterOpt,
    no_init_baseline: bool = typer.Option(False, "--no-init-baseline", help="skip the random-init W_K baseline"),
    null_kind: Optional[str] = NullOpt,
    ci_layers: Optional[str] = CiOpt,
    revision: Optional[str] = typer.Option(None, "--revision"),
    dtype: str = typer.Option("float32", "--dtype", help="float32|bfloat16|float16"),
    device: str = DeviceOpt,
    out_dir: Optional[Path] = OutOpt,
    seed: Optional[int] = typer.Option(None, "--seed"),
    force: bool = ForceOpt,
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code"),
    allow_pickle: bool = typer.Option(False, "--allow-pickle"),
    figures: Optional[str] = FiguresOpt,
) -> None:
    """Measure the Bayesian-geometry signatures on every layer; write report.html and results.json."""
    from geoprobe.scan import ScanConfig

    config = ScanConfig().updated(**_scan_options(_prompt_choice(prompts, domain), layers, batch_size, max_tokens, seed,
                                                  scatter_layers, no_init_baseline, null_kind, ci_layers,
                                                  _sampling(candidates, per_quintile, min_tokens, max_prompt_tokens)))
    load_options = dict(revision=revision, dtype=dtype, device=device, trust_remote_code=trust_remote_code,
                        allow_pickle=allow_pickle)
    _run_scan(model, config, load_options, out_dir, force, figures)


@app.command(name="run")
def run_probe(
    probe_file: Path = typer.Argument(..., help="a probe recipe, e.g. probes/scan.toml"),
    model: str = ModelOpt,
    prompts: Optional[str] = PromptsOpt,
    domain: Optional[str] = DomainOpt,
    candidates: Optional[int] = CandidatesOpt,
    per_quintile: Optional[int] = PerQuintileOpt,
    min_tokens: Optional[int] = MinTokOpt,
    max_prompt_tokens: Optional[int] = MaxTokOpt,
    layers: Optional[str] = LayersOpt,
    batch_size: Optional[int] = typer.Option(None, "--batch-size"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens"),
    scatter_layers: Optional[str] = ScatterOpt,
    no_init_baseline: bool = typer.Option(False, "--no-init-baseline"),
    null_kind: Optional[str] = NullOpt,
    ci_layers: Optional[str] = CiOpt,
    revision: Optional[str] = typer.Option(None, "--revision"),
    dtype: str = DtypeOpt,
    device: str = DeviceOpt,
    out_dir: Optional[Path] = OutOpt,
    seed: Optional[int] = typer.Option(None, "--seed"),
    force: bool = ForceOpt,
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code"),
    figures: Optional[str] = FiguresOpt,
) -> None:
    """Run a probe recipe (probes/*.toml); flags override the recipe's settings."""
    from geoprobe.scan import load_probe

    figures = check_figures(figures)  # format and Chromium; each run checks its own figures/ folder
    probe = load_probe(probe_file)
    if probe.command == "windtunnel":
        from geoprobe.cli_windtunnel import run_recipe as run_windtunnel

        run_windtunnel(probe, out_dir, force, seed, figures)
        return
    if probe.command == "denoise":
        from geoprobe.cli_denoise import run_recipe as run_denoise

        run_denoise(probe, out_dir, force, seed, figures)
        return
    if probe.command == "positional":
        from geoprobe.cli_positional import run_recipe as run_positional

        run_positional(probe, model, dict(dtype=dtype, device=device), out_dir, force, seed, figures)
        return
    if probe.command in ("sula", "intervene"):
        from geoprobe.cli_sula import run_recipe

        run_recipe(probe, model, dict(dtype=dtype, device=device), out_dir, force, seed, figures)
        return
    if probe.command == "compare-models":
        from geoprobe.cli_corpus import _run_compare_models

        config = dataclasses.replace(probe.config, scan=probe.config.scan.updated(
            seed=seed, batch_size=batch_size, sampling=_sampling(candidates, per_quintile, min_tokens, max_prompt_tokens)))
        _run_compare_models(config, dict(dtype=dtype, device=device), out_dir, force, figures)
        return
    if probe.command == "compare-domains":
        from geoprobe.cli_corpus import _run_domains

        scan_only = {"--prompts": prompts, "--domain": domain, "--layers": layers, "--batch-size": batch_size,
                     "--max-tokens": max_tokens, "--scatter-layers": scatter_layers, "--null": null_kind,
                     "--ci-layers": ci_layers, "--revision": revision}
        given = [flag for flag, v in scan_only.items() if v is not None] + (["--no-init-baseline"] if no_init_baseline else [])
        if given:
            raise GeoprobeError(f"{given[0]} is a scan flag; recipe {str(probe_file)!r} runs compare-domains: set it in "
                                "the recipe's [domains]/[sampling] tables instead")
        from dataclasses import replace

        from geoprobe.scan.config import _sampling as _sampling_config

        changes = {k: v for k, v in _sampling(candidates, per_quintile, min_tokens, max_prompt_tokens).items() if v is not None}
        config = replace(probe.config, seed=probe.config.seed if seed is None else seed,
                         sampling=_sampling_config({**dataclasses.asdict(probe.config.sampling), **changes}))
        _run_domains(model, config, dict(dtype=dtype, device=device), out_dir, force, figures)
        return
    config = probe.config.updated(**_scan_options(_prompt_choice(prompts, domain), layers, batch_size, max_tokens, seed,
                                                  scatter_layers, no_init_baseline, null_kind, ci_layers,
                                                  _sampling(candidates, per_quintile, min_tokens, max_prompt_tokens)))
    load_options = dict(revision=revision, dtype=dtype, device=device, trust_remote_code=trust_remote_code)
    _run_scan(model, config, load_options, out_dir, force, figures)


@app.command()
def report(
    results: Path = typer.Argument(..., help="results.json written by geoprobe scan (or its directory)"),
    out_file: Optional[Path] = typer.Option(None, "--out", "-o", help="HTML file; default report.html beside results"),
    force: bool = ForceOpt,
    figures: Optional[str] = typer.Option(None, "--figures", help="also write each figure as png|svg|pdf to "
                                          "figures/ beside the HTML file (kaleido + Chromium)"),
) -> None:
    """Rebuild the HTML report from saved results, without the model."""
    from geoprobe.scan import ScanResult

    base = results if results.is_dir() else results.parent
    target = out_file or base / "report.html"
    figures = check_figures(figures, target.parent, force)
    res = ScanResult.load(results)
    path = res.report(target, force=force)
    out.print(f"wrote {path}")
    write_figures(res, target.parent, figures, force)


# the corpus commands (prompts, sample, compare-domains, compare) and sula register themselves on ``app``
from geoprobe import cli_corpus  # noqa: E402,F401
from geoprobe import cli_sula  # noqa: E402,F401
from geoprobe import cli_windtunnel  # noqa: E402,F401
from geoprobe import cli_denoise  # noqa: E402,F401
from geoprobe import cli_positional  # noqa: E402,F401


def _usage_message(exc: Exception) -> str:
    """typer/click's message on one line, with the rejected value (typer checks types with pydantic,
    whose error holds it) and where to look: "Invalid value 'x' for '--batch-size': … (see 'geoprobe scan --help')"."""
    message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
    try:
        value = exc.__cause__.errors()[0]["input"]  # type: ignore[union-attr]
        message = message.replace("Invalid value for", f"Invalid value {value!r} for", 1)
    except Exception:  # noqa: BLE001 - not a pydantic validation error: keep the message as it is
        pass
    ctx = getattr(exc, "ctx", None)
    return message + (f" (see '{ctx.command_path} --help')" if ctx is not None else "")


def main() -> None:
    argv = sys.argv[1:]
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    warnings.showwarning = lambda message, category, *a, **k: err.print(f"warning: {message}", highlight=False,
                                                                         markup=False, soft_wrap=True)
    try:
        app(args=argv, prog_name="geoprobe", standalone_mode=False)
    except GeoprobeError as exc:
        if debug:
            raise
        err.print(f"error: {exc}", highlight=False, markup=False, soft_wrap=True)  # markup would eat "[section]"
        sys.exit(2)
    except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence
        import click

        # typer >= 0.20 vendors click (typer._click): its usage errors derive from typer.TyperException
        if isinstance(exc, (typer.TyperException, click.exceptions.ClickException)):
            if debug:
                raise
            if exc.format_message().strip():  # empty: a group called bare, whose help is already on stdout
                err.print(f"error: {_usage_message(exc)}", highlight=False, markup=False, soft_wrap=True)
            sys.exit(2)  # a usage error the user can fix, like GeoprobeError
        if isinstance(exc, (typer.Abort, click.exceptions.Abort)):
            sys.exit(130)
        if debug:
            raise
        err.print(f"error: unexpected {type(exc).__name__}: {' '.join(str(exc).split())} "
                  "(rerun with --debug for the traceback)", highlight=False, markup=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":  # `python -m geoprobe.cli`: run the imported module, whose app has every command
    from geoprobe import cli as _cli

    _cli.main()
