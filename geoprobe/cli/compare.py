"""``geoprobe compare``: cross-model comparison of scans (arXiv 2512.23752, Table 2), and the summary of a
compare-models recipe's run (geoprobe.compare.experiment runs both)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from geoprobe.cli.app import app, err, out
from geoprobe.cli.common import prints, reporting
from geoprobe.cli.options import OUTPUT, OutputOptions, takes
from geoprobe.compare.experiment import compare_into
from geoprobe.compare.result import ModelComparison


@app.command()
@takes(OUTPUT)
def compare(
    output: OutputOptions,
    results: list[Path] = typer.Argument(..., help="results.json files (or their run directories) from geoprobe scan"),
    layer: int = typer.Option(-1, "--layer", help="layer of the value manifold columns (default final)"),
) -> None:
    """Cross-model table (the paper's Table 2) and a global PCA basis across models, with figures."""
    with reporting() as reporter:
        compare_into(list(results), layer, output, reporter)


@prints(ModelComparison)
def print_comparison(comparison: Any, reporter: Any = None) -> None:
    """The Table-2 analogue in a terminal's width (compare.html has every column); the notes not already
    printed as warnings while the comparison ran."""
    skip = getattr(reporter, "warned", ())
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
