"""``geoprobe sample``, ``compare-domains`` and ``compare``: corpus prompt sets, domain restriction
(arXiv 2512.23752 §5.1, Table 1) and cross-model comparison (Table 2), plus the compare-models recipe."""

from __future__ import annotations

import dataclasses
import hashlib
import warnings
from pathlib import Path
from typing import Any, Collection, Optional

import typer
from rich.table import Table

from geoprobe.cli.app import app, err, out
from geoprobe.cli.common import check_figures, execute_run, open_model
from geoprobe.cli.options import LOAD, OUTPUT, BatchOpt, OutputOptions, ResamplesOpt, SeedOpt, model_run_dir, takes
from geoprobe.cli.progress import stage_progress
from geoprobe.cli.scan import CandidatesOpt, MaxTokOpt, MinTokOpt, PerQuintileOpt, execute_scan, sampling_changes
from geoprobe.compare.result import ModelComparison
from geoprobe.domains.result import DomainComparison
from geoprobe.errors import GeoprobeError, OutputExistsError
from geoprobe.kinds import PROMPTS_KIND
from geoprobe.models.loading import LoadOptions
from geoprobe.rundir import RunOutputs

DOMAINS_OUTPUTS = RunOutputs.of(DomainComparison, data={"prompts.jsonl": PROMPTS_KIND})
COMPARE_OUTPUTS = RunOutputs.of(ModelComparison)


def _sampling_config(candidates, per_quintile, min_tokens, max_prompt_tokens) -> Any:
    from geoprobe.sampling import SamplingConfig

    given = sampling_changes(candidates, per_quintile, min_tokens, max_prompt_tokens)
    return SamplingConfig(**{k: v for k, v in given.items() if v is not None})


@app.command()
@takes(LOAD)
def sample(
    load: LoadOptions,
    prompts: str = typer.Option("mixed", "--prompts", "-p", help="mixed or a corpus domain"),
    out_file: Path = typer.Option(..., "--out", "-o", help="JSON-lines file to write (one sampled prompt per line)"),
    candidates: Optional[int] = CandidatesOpt,
    per_quintile: Optional[int] = PerQuintileOpt,
    min_tokens: Optional[int] = MinTokOpt,
    max_prompt_tokens: Optional[int] = MaxTokOpt,
    seed: int = SeedOpt,
    force: bool = typer.Option(
        False, "--force", "--overwrite", help="replace a file geoprobe wrote (never anything else)"
    ),
) -> None:
    """Draw a stratified-entropy prompt set with a model and write it, to scan other models on the same prompts."""
    from geoprobe.domains.prompt_sets import write_prompt_sets
    from geoprobe.outputs import OutputLock, check_location, check_prompts_name, check_same_kind
    from geoprobe.prompts import prompt_source_kind
    from geoprobe.sampling import sample_corpus_set

    if prompt_source_kind(prompts) != "corpus":
        raise GeoprobeError(
            f"--prompts {prompts!r} is not a corpus set; sample draws from mixed or a domain "
            "(geoprobe prompts lists them)"
        )
    cfg = _sampling_config(candidates, per_quintile, min_tokens, max_prompt_tokens)
    check_prompts_name(out_file)
    check_same_kind(out_file, PROMPTS_KIND)
    check_location(out_file, directory=False)
    with OutputLock(out_file):
        if out_file.exists() or out_file.is_symlink():
            check_same_kind(out_file, PROMPTS_KIND)  # again, under the lock
            if not force:
                raise OutputExistsError(
                    f"{str(out_file)!r} already exists; pass --force to replace it or choose another --out"
                )
        m = open_model(load)
        with stage_progress({"sampling": "entropy of candidates"}) as progress:
            pset = sample_corpus_set(m, prompts, cfg, seed=seed, progress=lambda d, n: progress("sampling", d, n))
        write_prompt_sets({pset.name: pset}, out_file)
    out.print(
        f"wrote {out_file}: {len(pset.prompts)} prompts of set {pset.name} (sha256 {pset.hash[:12]}, seed {seed}); "
        f"scan any model on them with --prompts {out_file}"
    )


@app.command(name="compare-domains")
@takes(LOAD, OUTPUT)
def compare_domains_cmd(
    load: LoadOptions,
    output: OutputOptions,
    domains: Optional[str] = typer.Option(
        None, "--domains", help="comma-separated domains; default every available one"
    ),
    layer: int = typer.Option(-1, "--layer", help="layer to compare (negative from the end; default final)"),
    candidates: Optional[int] = typer.Option(
        None, "--candidates", help="mixed candidate pool (default 1000, at most 100000)"
    ),
    domain_candidates: int = typer.Option(
        250, "--domain-candidates", help="candidate pool of each single domain (at most 100000)"
    ),
    per_quintile: Optional[int] = PerQuintileOpt,
    min_tokens: Optional[int] = MinTokOpt,
    max_prompt_tokens: Optional[int] = MaxTokOpt,
    no_controls: bool = typer.Option(False, "--no-controls", help="skip the length/frequency-matched controls"),
    n_resamples: int = ResamplesOpt,
    n_permutations: int = typer.Option(1000, "--n-permutations", help="permutations per test (at most 100000)"),
    batch_size: int = BatchOpt,
    seed: int = SeedOpt,
) -> None:
    """Mixed vs domain-restricted value manifolds with CIs, difference tests and matched controls (Table 1)."""
    from geoprobe.domains.config import DomainsConfig

    wanted = tuple(d.strip() for d in domains.split(",") if d.strip()) if domains else None
    config = DomainsConfig(
        domains=wanted,
        layer=layer,
        domain_candidates=domain_candidates,
        controls=not no_controls,
        sampling=_sampling_config(candidates, per_quintile, min_tokens, max_prompt_tokens),
        batch_size=batch_size,
        n_resamples=n_resamples,
        n_permutations=n_permutations,
        seed=seed,
    )
    execute_domains(load, config, output)


def execute_domains(load: LoadOptions, config: Any, output: OutputOptions) -> Any:
    """Sample, capture and compare domains: prompts.jsonl, domains.json and domains.html in the run directory."""
    from geoprobe.domains.prompt_sets import write_prompt_sets
    from geoprobe.domains.run import check_domains, compare_domains_run

    check_domains(config.domains)  # unknown or missing domains fail before the model loads
    target = output.out or model_run_dir(load.model, "-domains")
    request = {"command": "compare-domains", "load": dataclasses.asdict(load), "config": dataclasses.asdict(config)}

    def compute(run: Any) -> Any:
        m = open_model(load)
        with stage_progress({"capture": "candidates: entropy + values"}) as progress:
            result = compare_domains_run(m, config, progress=progress)
        write_prompt_sets(result.sets, target / "prompts.jsonl")
        return result.comparison

    return execute_run(target, DOMAINS_OUTPUTS, request, output, compute, _print_domains)


def _print_domains(cmp: Any) -> None:
    table = Table(title=f"{cmp.model}, layer {cmp.layer}: mixed vs domain-restricted value manifold (%)")
    for col in ("set", "n", "PC1 [CI]", "PC1+PC2", "PR", "ΔPC1 vs mixed [CI]", "p"):
        table.add_column(col, justify="left" if col == "set" else "right", no_wrap=col == "set")
    for name in cmp.order():
        s, c = cmp.sets[name], cmp.versus_mixed(name)
        d = c.diff["pc1"] if c else None
        table.add_row(
            name,
            str(s.n),
            f"{100 * s.pc1.value:.1f} [{100 * s.pc1.low:.1f}, {100 * s.pc1.high:.1f}]",
            f"{100 * s.pc12.value:.1f}",
            f"{s.pr.value:.1f}",
            "—" if d is None else f"{100 * d.value:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]",
            "—" if c is None else f"{c.p_adjusted['pc1']:.2g}",
        )
    out.print(table)
    for note in cmp.notes:
        err.print(f"note: {note}", highlight=False)


@app.command()
@takes(OUTPUT)
def compare(
    output: OutputOptions,
    results: list[Path] = typer.Argument(..., help="results.json files (or their run directories) from geoprobe scan"),
    layer: int = typer.Option(-1, "--layer", help="layer of the value manifold columns (default final)"),
) -> None:
    """Cross-model table (the paper's Table 2) and a global PCA basis across models, with figures."""
    execute_compare(list(results), layer, output)


def _digest(path: Path) -> str:
    from geoprobe.paths import read_regular

    p = path / "results.json" if path.is_dir() else path
    try:  # a FIFO is not waited on: compare_results then refuses it in one line
        return hashlib.sha256(read_regular(p, lambda why: OSError(why))).hexdigest()
    except OSError:
        return "unreadable"


def execute_compare(results: list[Path], layer: int, output: OutputOptions) -> Any:
    """``geoprobe compare``: comparison.json and compare.html in ``output.out`` (default runs/compare)."""
    from geoprobe.compare import compare_results

    target = output.out or Path("runs") / "compare"
    request = {"command": "compare", "layer": layer, "inputs": [[str(p), _digest(p)] for p in results]}

    warned: set[str] = set()  # printed as they arose: the summary does not repeat them as notes

    def compute(run: Any) -> Any:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            comparison = compare_results(results, layer=layer)
        for w in caught:
            err.print(f"warning: {w.message}", highlight=False)
            warned.add(str(w.message))
        return comparison

    return execute_run(target, COMPARE_OUTPUTS, request, output, compute, lambda c: _print_comparison(c, skip=warned))


def _print_comparison(comparison: Any, skip: Collection[str] = ()) -> None:
    """The Table-2 analogue in a terminal's width (compare.html has every column)."""
    keep = (
        "model",
        "attention",
        "mixed PC1 %",
        "restricted set",
        "restricted PC1 %",
        "early key |cos|",
        "init |cos|",
        "focusing % [CI]",
    )
    rows = comparison.table()
    if rows:
        table = Table(title="models side by side (final-layer value PC1, early-layer keys, attention focusing)")
        for col in keep:
            table.add_column(col, no_wrap=col == "model")
        for r in rows:
            table.add_row(*(str(r.get(k, "")) for k in keep))
        out.print(table)
    g = comparison.global_pca
    if g is not None:
        out.print(
            f"global PCA over {len(g.prompts)} shared prompts: PC1 {100 * g.explained[0]:.1f} %, PC2 "
            f"{100 * g.explained[1]:.1f} %; "
            + "; ".join(
                f"{r['model']}: share of PC1 {r['share of PC1']}, ρ(own PC1, global PC1) {r['ρ(own PC1, global PC1)']}"
                for r in g.table()
            ),
            highlight=False,
        )
    for note in comparison.notes:
        if note not in skip:
            err.print(f"note: {note}", highlight=False)


def execute_compare_models(config: Any, load: LoadOptions, output: OutputOptions) -> Any:
    """A compare-models recipe: sample every set once with ``config.sampler``, scan each model on exactly
    those prompts (each loaded like ``load``, with its own --model), then compare the runs, all under
    ``output.out`` (default runs/compare-models)."""
    from geoprobe.domains.prompt_sets import write_prompt_sets
    from geoprobe.outputs import OutputLock, check_location, check_same_kind
    from geoprobe.prompts import prompt_source_kind
    from geoprobe.sampling import sample_corpus_set

    for s in config.sets:
        if prompt_source_kind(s) != "corpus":
            raise GeoprobeError(
                f"set {s!r} is not a corpus set; compare-models samples mixed or a domain (geoprobe prompts lists them)"
            )
    fmt = check_figures(output.figures)
    target = output.out or Path("runs") / "compare-models"
    files = {s: target / f"prompts-{s}.jsonl" for s in config.sets}
    runs = {(m, s): target / model_run_dir(m, f"-{s}").name for m in config.models for s in config.sets}
    check_location(target, writes="run", result=COMPARE_OUTPUTS.result)
    with OutputLock(target):
        for p in files.values():
            check_same_kind(p, PROMPTS_KIND)
        existing = [p for p in [*files.values(), *runs.values()] if p.exists()]
        if existing and not output.force:
            raise OutputExistsError(
                f"{str(existing[0])!r} already exists; pass --force to replace this run or choose another --out"
            )
        m = open_model(dataclasses.replace(load, model=config.sampler))
        for s in config.sets:
            with err.status(f"sampling {s} with {config.sampler} …"):
                pset = sample_corpus_set(m, s, config.scan.sampling, seed=config.scan.seed)
            write_prompt_sets({s: pset}, files[s])
            out.print(
                f"{s}: {len(pset.prompts)} prompts sampled with {config.sampler} (sha256 {pset.hash[:12]}) → {files[s]}"
            )
        del m
        for (model, s), run_dir in runs.items():
            execute_scan(
                dataclasses.replace(load, model=model),
                dataclasses.replace(config.scan, prompts=str(files[s])),
                OutputOptions(out=run_dir, force=True, figures=fmt, parent=target),
            )
    return execute_compare(list(runs.values()), -1, OutputOptions(out=target, force=True, figures=fmt))
