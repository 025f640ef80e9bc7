"""`geoprobe prompts`, `sample`, `compare-domains` and `compare`: corpus prompt sets, domain
restriction (arXiv 2512.23752 §5.1, Table 1) and cross-model comparison (Table 2).

Registered on :data:`geoprobe.cli.app`; errors follow the CLI's rule (one line, exit 2).
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from geoprobe.cli import (BatchOpt, CandidatesOpt, DeviceOpt, DtypeOpt, FiguresOpt, ForceOpt, MaxTokOpt, MinTokOpt,
                          ModelOpt, OutOpt, PerQuintileOpt, ResamplesOpt, SeedOpt, _open, _sampling, app, check_figures,
                          claim_run_dir, err, model_run_dir, out, stage_progress, write_figures)
from geoprobe.errors import GeoprobeError


@app.command(name="prompts")
def prompt_sets(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
    """List the prompt sets --prompts accepts: builtin, mixed and every corpus domain (available here?)."""
    from geoprobe.corpora import DOMAINS, available_domains

    avail = available_domains()
    rows = [{"set": "builtin", "kind": "builtin", "available": True, "note": "160 hand-written prompts"},
            {"set": "mixed", "kind": "corpus", "available": sum(v is None for v in avail.values()) >= 2,
             "note": "every available domain, stratified by next-token entropy"}]
    rows += [{"set": d, "kind": "corpus", "available": avail[d] is None, "note": avail[d] or ""} for d in DOMAINS]
    if as_json:
        out.print_json(json.dumps(rows))
        return
    table = Table(title="prompt sets (--prompts / --domain)")
    for col in ("set", "kind", "available", "note"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["set"], r["kind"], "yes" if r["available"] else "no", r["note"])
    out.print(table)


@app.command()
def sample(
    model: str = ModelOpt,
    prompts: str = typer.Option("mixed", "--prompts", "-p", help="mixed or a corpus domain"),
    out_file: Path = typer.Option(..., "--out", "-o", help="JSON-lines file to write (one sampled prompt per line)"),
    candidates: Optional[int] = CandidatesOpt,
    per_quintile: Optional[int] = PerQuintileOpt,
    min_tokens: Optional[int] = MinTokOpt,
    max_prompt_tokens: Optional[int] = MaxTokOpt,
    seed: int = SeedOpt,
    dtype: str = DtypeOpt,
    device: str = DeviceOpt,
    force: bool = ForceOpt,
) -> None:
    """Draw a stratified-entropy prompt set with a model and write it, to scan other models on the same prompts."""
    from geoprobe.prompts import prompt_source_kind
    from geoprobe.sampling import SamplingConfig, sample_corpus_set
    from geoprobe.scan.domains import write_prompt_sets

    if out_file.exists() and not force:
        raise GeoprobeError(f"{str(out_file)!r} already exists; pass --force to replace it or choose another --out")
    if prompt_source_kind(prompts) != "corpus":
        raise GeoprobeError(f"--prompts {prompts!r} is not a corpus set; sample draws from mixed or a domain "
                            "(geoprobe prompts lists them)")
    cfg = SamplingConfig(**{k: v for k, v in _sampling(candidates, per_quintile, min_tokens, max_prompt_tokens).items()
                            if v is not None})
    m = _open(model, dict(dtype=dtype, device=device))
    from rich.progress import Progress

    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("entropy of candidates", total=None)
        pset = sample_corpus_set(m, prompts, cfg, seed=seed,
                                 progress=lambda d, n: bar.update(task, completed=d, total=n))
    write_prompt_sets({pset.name: pset}, out_file)
    out.print(f"wrote {out_file}: {len(pset.prompts)} prompts of set {pset.name} (sha256 {pset.hash[:12]}, seed {seed}); "
              f"scan any model on them with --prompts {out_file}")


@app.command(name="compare-domains")
def compare_domains_cmd(
    model: str = ModelOpt,
    domains: Optional[str] = typer.Option(None, "--domains", help="comma-separated domains; default every available one"),
    layer: int = typer.Option(-1, "--layer", help="layer to compare (negative from the end; default final)"),
    candidates: Optional[int] = typer.Option(None, "--candidates", help="mixed candidate pool (default 1000)"),
    domain_candidates: int = typer.Option(250, "--domain-candidates", help="candidate pool of each single domain"),
    per_quintile: Optional[int] = PerQuintileOpt,
    min_tokens: Optional[int] = MinTokOpt,
    max_prompt_tokens: Optional[int] = MaxTokOpt,
    no_controls: bool = typer.Option(False, "--no-controls", help="skip the length/frequency-matched controls"),
    n_resamples: int = ResamplesOpt,
    n_permutations: int = typer.Option(1000, "--n-permutations"),
    batch_size: int = BatchOpt,
    dtype: str = DtypeOpt,
    device: str = DeviceOpt,
    out_dir: Optional[Path] = OutOpt,
    seed: int = SeedOpt,
    force: bool = ForceOpt,
    figures: Optional[str] = FiguresOpt,
) -> None:
    """Mixed vs domain-restricted value manifolds with CIs, difference tests and matched controls (Table 1)."""
    from geoprobe.sampling import SamplingConfig
    from geoprobe.scan.domains import DomainsConfig, _check_domains

    wanted = tuple(d.strip() for d in domains.split(",") if d.strip()) if domains else None
    _check_domains(wanted)  # unknown or missing domains fail before the model loads
    cfg = SamplingConfig(**{k: v for k, v in _sampling(candidates, per_quintile, min_tokens, max_prompt_tokens).items()
                            if v is not None})
    config = DomainsConfig(domains=wanted, layer=layer, sampling=cfg, domain_candidates=domain_candidates,
                           controls=not no_controls, batch_size=batch_size, n_resamples=n_resamples,
                           n_permutations=n_permutations, seed=seed)
    _run_domains(model, config, dict(dtype=dtype, device=device), out_dir, force, figures)


def _run_domains(model: str, config, load_options: dict, out_dir: Optional[Path], force: bool,
                 figures: Optional[str] = None) -> None:
    """Sample, capture and compare domains for ``model``; write domains.json/.html and prompts.jsonl."""
    from geoprobe.report.domains import write_domains_report
    from geoprobe.scan.domains import _check_domains, compare_domains_run, write_prompt_sets

    target = claim_run_dir(out_dir or model_run_dir(model, "-domains"), ("domains.json", "domains.html", "prompts.jsonl"),
                           force)
    _check_domains(config.domains)  # unknown or missing domains fail before the model loads
    figures = check_figures(figures, target, force)
    m = _open(model, load_options)
    with stage_progress({"capture": "candidates: entropy + values"}) as progress:
        run = compare_domains_run(m, config, progress=progress)
    cmp = run.comparison
    cmp.save(target / "domains.json")
    write_prompt_sets(run.sets, target / "prompts.jsonl")
    report = write_domains_report(cmp, target / "domains.html", force=True)  # existence was checked first
    table = Table(title=f"{cmp.model}, layer {cmp.layer}: mixed vs domain-restricted value manifold (%)")
    for col in ("set", "n", "PC1 [CI]", "PC1+PC2", "PR", "ΔPC1 vs mixed [CI]", "p"):
        table.add_column(col, justify="left" if col == "set" else "right", no_wrap=col == "set")
    for name in cmp.order():
        s, c = cmp.sets[name], cmp.versus_mixed(name)
        d = c.diff["pc1"] if c else None
        table.add_row(name, str(s.n), f"{100 * s.pc1.value:.1f} [{100 * s.pc1.low:.1f}, {100 * s.pc1.high:.1f}]",
                      f"{100 * s.pc12.value:.1f}", f"{s.pr.value:.1f}",
                      "—" if d is None else f"{100 * d.value:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]",
                      "—" if c is None else f"{c.p_adjusted['pc1']:.2g}")
    out.print(table)
    for note in cmp.notes:
        err.print(f"note: {note}", highlight=False)
    out.print(f"wrote {report}, {target / 'domains.json'} and {target / 'prompts.jsonl'}")
    write_figures(cmp, target, figures, force)


@app.command()
def compare(
    results: list[Path] = typer.Argument(..., help="results.json files (or their run directories) from geoprobe scan"),
    out_dir: Path = typer.Option(Path("runs/compare"), "--out", "-o", help="directory for comparison.json and compare.html"),
    layer: int = typer.Option(-1, "--layer", help="layer of the value manifold columns (default final)"),
    force: bool = ForceOpt,
    figures: Optional[str] = FiguresOpt,
) -> None:
    """Cross-model table (the paper's Table 2) and a global PCA basis across models, with figures."""
    from geoprobe.compare import run_compare

    figures = check_figures(figures, out_dir, force)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        comparison, json_path, html_path = run_compare(results, out_dir, force=force, layer=layer)
    for w in caught:
        err.print(f"warning: {w.message}", highlight=False)
    _print_comparison(comparison)
    out.print(f"wrote {html_path} and {json_path}")
    write_figures(comparison, out_dir, figures, force)


def _print_comparison(comparison) -> None:
    """The Table-2 analogue in a terminal's width (compare.html has every column)."""
    keep = ("model", "attention", "mixed PC1 %", "restricted set", "restricted PC1 %", "early key |cos|", "init |cos|",
            "focusing % [CI]")
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
        out.print(f"global PCA over {len(g.prompts)} shared prompts: PC1 {100 * g.explained[0]:.1f} %, PC2 "
                  f"{100 * g.explained[1]:.1f} %; " + "; ".join(
                      f"{r['model']}: share of PC1 {r['share of PC1']}, ρ(own PC1, global PC1) {r['ρ(own PC1, global PC1)']}"
                      for r in g.table()), highlight=False)
    for note in comparison.notes:
        err.print(f"note: {note}", highlight=False)


def _run_compare_models(config, load_options: dict, out_dir: Optional[Path], force: bool,
                        figures: Optional[str] = None) -> None:
    """A compare-models recipe: sample every set once with ``config.sampler``, scan each model on
    exactly those prompts, then compare the runs (all under ``out_dir``)."""
    import dataclasses

    from geoprobe.cli import _run_scan
    from geoprobe.compare import run_compare
    from geoprobe.prompts import prompt_source_kind
    from geoprobe.sampling import sample_corpus_set
    from geoprobe.scan.domains import write_prompt_sets

    target = out_dir or Path("runs") / "compare-models"
    files = {s: target / f"prompts-{s}.jsonl" for s in config.sets}
    runs = {(m, s): target / model_run_dir(m, f"-{s}").name for m in config.models for s in config.sets}
    claim_run_dir(target, [*(p.name for p in files.values()), *(p.name for p in runs.values()), "compare.html"], force)
    for s in config.sets:
        if prompt_source_kind(s) != "corpus":
            raise GeoprobeError(f"set {s!r} is not a corpus set; compare-models samples mixed or a domain "
                                "(geoprobe prompts lists them)")
    figures = check_figures(figures, target, force)
    m = _open(config.sampler, load_options)
    for s in config.sets:
        with err.status(f"sampling {s} with {config.sampler} …"):
            pset = sample_corpus_set(m, s, config.scan.sampling, seed=config.scan.seed)
        write_prompt_sets({s: pset}, files[s])
        out.print(f"{s}: {len(pset.prompts)} prompts sampled with {config.sampler} (sha256 {pset.hash[:12]}) → {files[s]}")
    del m
    for (model, s), run_dir in runs.items():
        _run_scan(model, dataclasses.replace(config.scan, prompts=str(files[s])), load_options, run_dir, True, figures)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        comparison, json_path, html_path = run_compare(list(runs.values()), target, force=True)
    for w in caught:
        err.print(f"warning: {w.message}", highlight=False)
    _print_comparison(comparison)
    out.print(f"wrote {html_path} and {json_path}")
    write_figures(comparison, target, figures, force)
