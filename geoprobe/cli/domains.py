"""``geoprobe compare-domains``: mixed vs domain-restricted value manifolds (arXiv 2512.23752 §5.1,
Table 1); geoprobe.domains.experiment runs it."""

from __future__ import annotations

from typing import Any, Optional

import typer
from rich.table import Table

from geoprobe.cli.app import app, err, out
from geoprobe.cli.common import launch, prints
from geoprobe.cli.corpus import sampling_config
from geoprobe.cli.options import LOAD, OUTPUT, BatchOpt, OutputOptions, ResamplesOpt, SeedOpt, takes
from geoprobe.cli.scan import MaxTokOpt, MinTokOpt, PerQuintileOpt
from geoprobe.domains.config import DomainsConfig
from geoprobe.domains.experiment import EXPERIMENT
from geoprobe.domains.result import DomainComparison
from geoprobe.models.loading import LoadOptions
from geoprobe.text import number


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
    wanted = tuple(d.strip() for d in domains.split(",") if d.strip()) if domains else None
    config = DomainsConfig(
        domains=wanted,
        layer=layer,
        domain_candidates=domain_candidates,
        controls=not no_controls,
        sampling=sampling_config(candidates, per_quintile, min_tokens, max_prompt_tokens),
        batch_size=batch_size,
        n_resamples=n_resamples,
        n_permutations=n_permutations,
        seed=seed,
    )
    launch(EXPERIMENT, config, load, output)


@prints(DomainComparison)
def print_domains(cmp: Any, reporter: Any = None) -> None:
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
            "—"
            if d is None
            else f"{number(100 * d.value, '+.1f')} [{number(100 * d.low, '+.1f')}, {number(100 * d.high, '+.1f')}]",
            "—" if c is None else f"{c.p_adjusted['pc1']:.2g}",
        )
    out.print(table)
    for note in cmp.notes:
        err.print(f"note: {note}", highlight=False)
