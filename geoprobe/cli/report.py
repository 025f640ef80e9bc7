"""``geoprobe report``: rebuild the HTML page (and figures) of any results file, without the model.

Works for every results kind (scan, compare-domains, compare, sula, intervene, positional, denoise,
windtunnel), so a run stopped between writing its JSON and its page is finished from the JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from geoprobe.cli.app import app
from geoprobe.cli.common import check_figures, write_report


@app.command()
def report(
    results: Path = typer.Argument(
        ...,
        help="a results file any geoprobe command wrote (results.json, sula.json, …) or the run directory holding it",
    ),
    out_file: Optional[Path] = typer.Option(
        None, "--out", "-o", help="HTML file; default the run's page beside the results (report.html, sula.html, …)"
    ),
    force: bool = typer.Option(
        False, "--force", "--overwrite", help="replace a page geoprobe wrote (never anything else)"
    ),
    figures: Optional[str] = typer.Option(
        None,
        "--figures",
        help="also write each figure as png|svg|pdf to figures/ beside the HTML file (kaleido + Chromium)",
    ),
) -> None:
    """Rebuild the HTML report from saved results, without the model."""
    from geoprobe.recipes import find_results, load_result

    fmt = check_figures(figures)
    path = find_results(results)
    res = load_result(path)
    target = out_file or path.parent / res.page_name()
    write_report(res, target, fmt, force)
