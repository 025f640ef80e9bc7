"""``geoprobe sweep SWEEP.toml`` and ``geoprobe sweep status OUT``: the command line of geoprobe.sweep."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from geoprobe.cli.app import app, err, out

FORMATS = ("table", "json")  #: what `geoprobe sweep status --format` prints


@app.command(context_settings={"help_option_names": ["-h", "--help"]})
def sweep(
    what: str = typer.Argument(..., help="a sweep file (SWEEP.toml), or `status` followed by a sweep's directory"),
    directory: Optional[Path] = typer.Argument(None, help="with `status`: the sweep's --out"),
    out_dir: Optional[Path] = typer.Option(
        None, "--out", "-o", help="the sweep's directory (default: the sweep file's \\[sweep] out)", show_default=False
    ),
    executor: Optional[str] = typer.Option(
        None, "--executor", help="local (one cell after another, here; the default) | ray", show_default=False
    ),
    address: Optional[str] = typer.Option(
        None,
        "--address",
        help="with --executor ray: none or local (a private Ray for this command), auto (this machine's "
        "cluster), HOST:PORT (a cluster's GCS) or ray://HOST:PORT (Ray Client)",
        show_default=False,
    ),
    threads: Optional[int] = typer.Option(
        None, "--threads", help="CPU threads per cell (Ray: its num_cpus); default 1", show_default=False
    ),
    arrays: bool = typer.Option(False, "--arrays", help="with --executor ray: bring each cell's arrays back too"),
    force: bool = typer.Option(
        False, "--force", help="start the sweep in --out again (only the sweep's own files are removed)"
    ),
    contrast_resamples: Optional[int] = typer.Option(
        None,
        "--contrast-resamples",
        help="scan sweeps: bootstrap resamples of the paired contrasts and emergence across checkpoints "
        "(default 1000; 0: none)",
        show_default=False,
    ),
    baseline: Optional[str] = typer.Option(
        None,
        "--baseline",
        help="scan sweeps: the cell id or revision the contrasts are taken against (default: each series' step 0)",
        show_default=False,
    ),
    fmt: Optional[str] = typer.Option(
        None,
        "--format",
        help="with `status`: table (the default) or json (every cell's row and the counts, for a program)",
        show_default=False,
    ),
) -> None:
    """Run one experiment over a grid (models, revisions, seeds, settings): each cell an ordinary run
    under OUT/cells/<id>/, with OUT/sweep.json, OUT/sweep.parquet and OUT/sweep.html. A rerun verifies
    the finished cells and computes the rest; a failed cell is recorded and the others go on (exit 1
    naming them). `geoprobe sweep status OUT` shows where a sweep stands."""
    from geoprobe.errors import SweepError
    from geoprobe.sweep import read_sweep, run_sweep, status
    from geoprobe.sweep.status import summary

    if what == "status":
        given = [
            flag
            for flag, value in (
                ("--out", out_dir),
                ("--executor", executor),
                ("--address", address),
                ("--threads", threads),
                ("--arrays", arrays or None),
                ("--force", force or None),
                ("--contrast-resamples", contrast_resamples),
                ("--baseline", baseline),
            )
            if value is not None
        ]
        if fmt not in (None, *FORMATS):
            raise SweepError(
                f"--format {fmt!r} is not one of {', '.join(FORMATS)}; pass --format table or --format json"
            )
        if given:
            raise SweepError(f"{given[0]} does not apply to `geoprobe sweep status`, which only reads; drop it")
        if directory is None:
            raise SweepError("geoprobe sweep status needs the sweep's directory: geoprobe sweep status OUT")
        manifest = status(directory)
        c = manifest.counts()
        if fmt == "json":
            out.print_json(json.dumps({"cells": summary(manifest), "counts": {**c, "cells": len(manifest.cells)}}))
            return
        _status_table(summary(manifest))
        out.print(f"{c['done']} done, {c['failed']} failed, {c['pending']} not run of {len(manifest.cells)} cells")
        return
    if fmt is not None:
        raise SweepError(
            "--format applies to `geoprobe sweep status OUT` only; drop it (a sweep writes OUT/sweep.json)"
        )
    if directory is not None:
        raise SweepError(f"unexpected argument {str(directory)!r}: pass one sweep file (or `status OUT`)")
    from geoprobe.cli.progress import stage_progress

    with stage_progress(group=lambda stage: "cells") as bar:

        def progress(done: int, failed: int, running: int, total: int, eta: float | None) -> None:
            bar(f"cells ({failed} failed, {running} running)", done + failed, total)

        manifest = run_sweep(
            what,
            out=out_dir,
            executor=executor or "local",  # type: ignore[arg-type]
            address=address,
            force=force,
            arrays=arrays,
            threads=1 if threads is None else threads,
            progress=progress,
            say=lambda line: err.print(line, markup=False, highlight=False, soft_wrap=True),
            contrast_resamples=1000 if contrast_resamples is None else contrast_resamples,
            baseline=baseline,
        )
    c = manifest.counts()
    where = out_dir if out_dir is not None else read_sweep(what).out
    out.print(f"{c['done']} of {len(manifest.cells)} cells done, {c['failed']} failed; wrote {where}")
    failed = [x.id for x in manifest.cells if x.status == "failed"]
    if failed:
        err.print(f"error: {len(failed)} cell(s) failed: {', '.join(failed[:10])}{' …' if len(failed) > 10 else ''}")
        raise typer.Exit(1)


def _status_table(rows: list[dict]) -> None:
    from rich.table import Table

    if not rows:
        return
    table = Table(show_lines=False)
    for key in rows[0]:
        table.add_column(key, overflow="fold")
    for r in rows:
        table.add_row(*("" if v is None else str(v) for v in r.values()))
    out.print(table)
