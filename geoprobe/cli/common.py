"""What the commands share: progress displays, loading a model, tables, and running an experiment
into its run directory (claimed, finished or written in the order data → JSON → page → figures)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from rich.table import Table

from geoprobe.cli.app import err, out
from geoprobe.cli.options import OutputOptions
from geoprobe.models.loading import LoadOptions
from geoprobe.outputs import MIN_FREE_BYTES
from geoprobe.rundir import Run, RunOutputs, claim_run


def open_model(load: LoadOptions) -> Any:
    """Load the model ``load`` names, with a status line on stderr."""
    with err.status(f"loading {load.model} …"):
        return load.load()


def say_prompts_read(path: str, prompts: Sequence[str]) -> None:
    """On stdout, before the model loads: which file the prompts were read from and how many, since
    every line of it becomes a prompt that the capture keeps (a recipe's ``[prompts] file`` and
    ``--prompts FILE`` alike; stderr stays for the one ``error:`` line should the run fail)."""
    distinct = len(set(prompts))
    repeated = f" ({distinct} distinct)" if distinct < len(prompts) else ""
    out.print(
        f"prompts: {len(prompts)}{repeated} read from {str(Path(path).resolve())!r}", highlight=False, soft_wrap=True
    )


def print_rows(title: str, rows: Sequence[dict]) -> None:
    """A rich table on stdout from rows of {column: text} (the columns of the first row)."""
    table = Table(title=title)
    for col in rows[0]:
        table.add_column(col)
    for r in rows:
        table.add_row(*r.values())
    out.print(table)


def check_figures(fmt: Optional[str]) -> Optional[str]:
    """--figures FMT, checked before any model loads: the format and a Chromium (the files themselves
    are checked when the run directory is claimed)."""
    from geoprobe.report.export import check_figures as check

    return check(fmt)


def write_figures(
    obj: Any, run_dir: Path, fmt: Optional[str], force: bool, only: Optional[Sequence[str]] = None
) -> None:
    """--figures FMT: ``obj``'s report figures as run_dir/figures/<anchor>.FMT (one browser start)."""
    if fmt is None:
        return
    from geoprobe.report.export import export_figures, figures_dir

    with err.status(f"writing {fmt} figures …"):
        paths = export_figures(obj, figures_dir(run_dir), fmt, force=force, only=only)
    out.print(f"wrote {len(paths)} {fmt} figures to {run_dir / 'figures'}")


def finish(run: Run, fmt: Optional[str]) -> Any:
    """Write what a stopped run is missing (its page, its figures) from the results JSON it wrote."""
    from geoprobe.recipes import load_result
    from geoprobe.report.export import figure_list, figures_dir

    result = load_result(run.result_path)
    written = []
    if run.page_path is not None and not run.page_path.exists():
        written.append(str(result.report(run.page_path)))
    if fmt is not None:
        todo = [a for a, _, _ in figure_list(result) if not (figures_dir(run.dir) / f"{a}.{fmt}").exists()]
        if todo:
            write_figures(result, run.dir, fmt, force=False, only=todo)
            written.append(f"{len(todo)} {fmt} figures")
    out.print(
        f"finished {run.dir}: {run.result_path.name} was already there from the same command and settings; wrote "
        f"{' and '.join(written)} from it without recomputing (pass --force to recompute)",
        highlight=False,
    )
    return result


def write_report(result: Any, target: Path, fmt: Optional[str], force: bool) -> Path:
    """Write ``result``'s page to ``target`` (and its figures beside it, in ``fmt``) under the
    output lock, after checking the name (.html), the location, what is there (only a page geoprobe
    wrote is replaced) and the figure files (``geoprobe report``)."""
    from geoprobe.kinds import PAGE_KIND
    from geoprobe.outputs import OutputLock, check_location, check_page_name, check_same_kind
    from geoprobe.report.export import check_figures as check_figure_files

    check_page_name(target)
    check_location(target, directory=False)
    check_same_kind(target, PAGE_KIND)
    with OutputLock(target):
        check_figure_files(fmt, target.parent, force=force)
        page = result.report(target, force=force)
        out.print(f"wrote {page}")
        write_figures(result, target.parent, fmt, force)
    return page


def execute_run(
    target: Path,
    outputs: RunOutputs,
    request: Mapping[str, Any],
    output: OutputOptions,
    compute: Callable[[Run], Any],
    show: Callable[[Any], None],
    *,
    need_bytes: int = MIN_FREE_BYTES,
    before: Callable[[Run], None] | None = None,
) -> Any:
    """Run one experiment into ``target``: check the figure format, claim the directory (location, lock,
    ownership, finish-or-refuse), then ``compute(run)`` (which writes any data outputs itself), save the
    results JSON and its record, the page and the figures, and ``show`` the result. ``before(run)``
    runs after the claim and before the work (e.g. discarding a checkpoint under --force)."""
    fmt = check_figures(output.figures)
    with claim_run(
        target,
        outputs,
        request=request,
        force=output.force,
        figures=fmt,
        need_bytes=need_bytes,
        parent=output.parent,
        in_place=output.in_place,
    ) as run:
        if run.finishing:
            return finish(run, fmt)
        if before is not None:
            before(run)
        result = compute(run)
        result.save(run.result_path)
        run.record()
        page = None if run.page_path is None else result.report(run.page_path, force=True)  # checked at the claim
        show(result)
        out.print(f"wrote {', '.join(str(p) for p in (page, run.result_path) if p is not None)}", highlight=False)
        write_figures(result, target, fmt, force=True)
        return result
