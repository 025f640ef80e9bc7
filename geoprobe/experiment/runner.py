"""Running an experiment into its run directory, the same from Python, a recipe and the command line.

:func:`run_into` claims the directory (:func:`geoprobe.rundir.claim_run`: location, lock, ownership,
finish-or-refuse), computes, and writes in the order data → results JSON (and its record) → page →
figures; a run stopped between those writes is finished from its JSON; a run stopped while it computed
resumes from its partial state (``<run>/<name>.partial``), which is discarded under ``force`` and once
the results are written. :func:`write_page` is ``geoprobe report``'s writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from geoprobe.experiment.descriptor import OutputOptions
from geoprobe.experiment.reporter import Reporter, Stages
from geoprobe.outputs import MIN_FREE_BYTES
from geoprobe.rundir import Run, RunOutputs, claim_run


def open_model(load: Any, reporter: Reporter) -> Any:
    """The model ``load`` names (LoadOptions), loaded under a status line and timed (its ``load_s``); a
    LoadedModel as it is."""
    from geoprobe.models.loaded import timed
    from geoprobe.models.options import LoadOptions

    if not isinstance(load, LoadOptions):
        return load
    with reporter.status(f"loading {load.model} …"):
        return timed(load.load)


def model_name(model: Any) -> str:
    """The name a run directory is named after: ``--model`` as given, or a loaded model's id."""
    return model.model if hasattr(model, "model") else model.model_id


def load_request(model: Any) -> dict[str, Any]:
    """How the model was loaded, as a run records it (a loaded model passed in: its id and weights)."""
    import dataclasses

    from geoprobe.models.options import LoadOptions

    if isinstance(model, LoadOptions):  # not any dataclass: a LoadedModel is one too, holding the model itself
        return dataclasses.asdict(model)
    return {"model": model.model_id, "weights": model.provenance.weights}


def model_run_dir(model: str, suffix: str = "") -> Path:
    """The default run directory of ``model``: runs/<model with / and : made path-safe><suffix>."""
    return Path("runs") / (model.replace("/", "--").replace(":", "-") + suffix)


def check_figures(fmt: str | None) -> str | None:
    """--figures FMT, checked before any model loads: the format and a Chromium (the files themselves
    are checked when the run directory is claimed)."""
    from geoprobe.report.export import check_figures as check

    return check(fmt)


def write_figures(
    obj: Any, run_dir: Path, fmt: str | None, force: bool, reporter: Reporter, only: Sequence[str] | None = None
) -> None:
    """``obj``'s report figures as run_dir/figures/<anchor>.FMT (one browser start)."""
    if fmt is None:
        return
    from geoprobe.report.export import export_figures, figures_dir

    with reporter.status(f"writing {fmt} figures …"):
        paths = export_figures(obj, figures_dir(run_dir), fmt, force=force, only=only)
    reporter.say(f"wrote {len(paths)} {fmt} figures to {run_dir / 'figures'}")


def finish(run: Run, result_cls: type, fmt: str | None, reporter: Reporter, plotlyjs: str | None = None) -> Any:
    """Write what a stopped run is missing (its page, its figures) from the results JSON it wrote."""
    from geoprobe.report.export import figure_list, figures_dir

    result = result_cls.load(run.result_path)
    written = []
    if run.page_path is not None and not run.page_path.exists():
        written.append(str(result.report(run.page_path, plotlyjs=plotlyjs)))
    if fmt is not None:
        todo = [a for a, _, _ in figure_list(result) if not (figures_dir(run.dir) / f"{a}.{fmt}").exists()]
        if todo:
            write_figures(result, run.dir, fmt, False, reporter, only=todo)
            written.append(f"{len(todo)} {fmt} figures")
    reporter.say(
        f"finished {run.dir}: {run.result_path.name} was already there from the same command and settings; wrote "
        f"{' and '.join(written)} from it without recomputing (pass --force to recompute)"
    )
    return result


def write_page(result: Any, target: Path, fmt: str | None, force: bool, reporter: Reporter) -> Path:
    """Write ``result``'s page to ``target`` (and its figures beside it, in ``fmt``) under the output
    lock, after checking the name (.html), the location, what is there (only a page geoprobe wrote is
    replaced) and the figure files (``geoprobe report``)."""
    from geoprobe.kinds import PAGE_KIND
    from geoprobe.outputs import OutputLock, check_location, check_page_name, check_same_kind
    from geoprobe.report.export import check_figures as check_figure_files

    check_page_name(target)
    check_location(target, directory=False)
    check_same_kind(target, PAGE_KIND)
    with OutputLock(target):
        check_figure_files(fmt, target.parent, force=force)
        page = result.report(target, force=force)
        reporter.say(f"wrote {page}")
        write_figures(result, target.parent, fmt, force, reporter)
    return page


def finished(run_dir: Path, result_cls: type, request: Mapping[str, Any], figures: str | None) -> bool:
    """Whether ``run_dir`` holds a finished run of this very ``request``: its results, its page (and the
    requested figures), with the request recorded beside the results matching (a sweep reuses such a run)."""
    import json

    from geoprobe.outputs import figures_dir
    from geoprobe.rundir import recorded_request

    result, page = result_cls.FILE, result_cls.PAGE
    if not (run_dir / result).is_file() or (page is not None and not (run_dir / page).is_file()):
        return False
    if figures and not any(figures_dir(run_dir).glob(f"*.{figures}")):
        return False
    return recorded_request(run_dir, result) == json.loads(json.dumps(request, default=str))


def discard_partial(path: Path) -> None:
    """Remove a run's partial state (a capture checkpoint, or finished units of work: geoprobe.experiment.units)."""
    from geoprobe.experiment.units import discard

    if path.exists():
        discard(path)


def run_into(
    target: Path,
    outputs: RunOutputs,
    result_cls: type,
    request: Mapping[str, Any],
    output: OutputOptions,
    compute: Callable[[Run], Any],
    reporter: Reporter,
    *,
    stages: Stages | None = None,
    need_bytes: int = MIN_FREE_BYTES,
) -> Any:
    """Run one experiment into ``target``: check the figure format, claim the directory (location, lock,
    ownership, finish-or-refuse), then ``compute(run)`` (which writes any data outputs itself; under
    ``output.force`` its partial state is discarded first), save the results JSON and its record, the
    page and the figures, discard the partial state, and report the result as shown."""
    fmt = check_figures(output.figures)
    partial = None if outputs.partial is None else target / outputs.partial
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
            return finish(run, result_cls, fmt, reporter, output.plotlyjs)
        if output.force and partial is not None and outputs.partial not in (outputs.data or {}):
            discard_partial(partial)
        with reporter.stages(stages or Stages()):
            result = compute(run)
        result.save(run.result_path)
        run.record()
        page = (  # checked at the claim
            None if run.page_path is None else result.report(run.page_path, force=True, plotlyjs=output.plotlyjs)
        )
        reporter.shown(result)
        reporter.say(f"wrote {', '.join(str(p) for p in (page, run.result_path) if p is not None)}")
        write_figures(result, target, fmt, True, reporter)
    if partial is not None and outputs.partial not in (outputs.data or {}):
        discard_partial(partial)
    return result
