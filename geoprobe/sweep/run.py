"""``geoprobe sweep``: run every cell of a sweep file, each an ordinary run under ``OUT/cells/<id>/``,
with the manifest ``OUT/sweep.json``, the tidy table ``OUT/sweep.parquet`` and the page ``OUT/sweep.html``.

The driver (this module) claims OUT, works out which cells are left (a rerun after any interruption
skips finished cells), hands the rest to an executor (``local`` or ``ray``: geoprobe.sweep.executors),
and writes each outcome as it arrives: a worker's files into the cell's directory, then the manifest.
A failed cell records its one-line error and the others go on."""

from __future__ import annotations

import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Literal

from geoprobe.errors import SweepError
from geoprobe.kinds import directory_kind
from geoprobe.outputs import OutputLock, check_location, refuse_foreign, shown
from geoprobe.sweep.cell import CellOutcome, CellTask
from geoprobe.sweep.manifest import MANIFEST, CellRecord, SweepManifest, merged, read_manifest
from geoprobe.sweep.spec import SweepSpec, check_coordinates, read_sweep

Executor = Literal["local", "ray"]
#: what a sweep directory holds besides its cells
SWEEP_FILES = (MANIFEST, "sweep.parquet", "sweep.html")
#: progress(done, failed, running, total, eta_seconds or None)
Progress = Callable[[int, int, int, int, float | None], None]


def checked(spec: SweepSpec) -> None:
    """The experiment exists, its tables read as its recipe, and every coordinate is one of its settings."""
    from dataclasses import fields

    from geoprobe.models.loading import load_fields
    from geoprobe.recipes import experiments

    known = experiments()
    if spec.experiment not in known:
        raise SweepError(f"sweep {spec.path!r} runs experiment {spec.experiment!r}; known: {', '.join(known)}")
    exp = known[spec.experiment]
    exp.config.from_tables(dict(spec.tables), Path(spec.path))  # a ProbeError names the file and key
    check_coordinates(spec, {f.name for f in load_fields()}, {f.name for f in fields(exp.config)}, set(exp.loads))


def claim(out: Path, spec: SweepSpec, force: bool) -> SweepManifest | None:
    """Check OUT before any work: inside no other geoprobe output; empty, absent, or this sweep's own
    directory. Returns the manifest to resume from (None: a fresh sweep). A sweep directory of other
    settings is refused unless ``force``, which starts it again (only geoprobe's own files replaced)."""
    check_location(out)
    for above in out.resolve().parents:
        kind = directory_kind(above)
        if kind is not None:
            raise SweepError(
                f"--out {str(out)!r} lies inside {shown(above)!r}, {kind.describe()}; choose another --out"
            )
    if not out.exists():
        return None
    old = read_manifest(out) if (out / MANIFEST).exists() else None
    if old is None:
        kind = directory_kind(out)
        if kind is not None:
            raise SweepError(f"--out {str(out)!r} is {kind.describe()}, not a sweep directory; choose another --out")
        others = [p for p in out.iterdir() if not p.name.startswith(".")]
        if others:
            refuse_foreign(others[0], "files in a directory that is not a sweep's")
        return None
    if old.digest != spec.digest() or old.experiment != spec.experiment:
        if not force:
            raise SweepError(
                f"{str(out)!r} holds a sweep of other settings (from {shown(Path(old.sweep_file))!r}); pass --force "
                "to start it again or choose another --out"
            )
        for name in SWEEP_FILES:
            (out / name).unlink(missing_ok=True)
        shutil.rmtree(out / "cells", ignore_errors=True)
        return None
    return old


def _record(prev: CellRecord, outcome: CellOutcome, cell_dir: Path, out: Path, result_file: str) -> CellRecord:
    base = dict(seconds=outcome.seconds, node=outcome.node, attempts=prev.attempts + 1)
    if outcome.error is not None:
        return replace(prev, status="failed", error=outcome.error, result=None, **base)
    keep = ("model_id", "source", "weights", "tokenizer", "dtype", "prompts_hash", "seed", "versions")
    prov = {k: v for k, v in outcome.provenance.items() if k in keep}
    rel = str((cell_dir / result_file).relative_to(out))
    return replace(prev, status="done", error=None, result=rel, n_params=outcome.n_params, provenance=prov, **base)


def run_sweep(
    sweep_file: str | Path,
    *,
    out: str | Path | None = None,
    executor: Executor = "local",
    address: str | None = None,
    force: bool = False,
    arrays: bool = False,
    threads: int = 1,
    progress: Progress | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> SweepManifest:
    """Run the sweep ``sweep_file`` into ``out`` (default: the file's ``[sweep] out``) and return its
    manifest; the table and page are written once every cell has an outcome."""
    from geoprobe.recipes import experiments
    from geoprobe.sweep import executors
    from geoprobe.sweep.cell import located, write_files
    from geoprobe.sweep.memory import cell_memory

    spec = read_sweep(sweep_file)
    checked(spec)
    if out is None and spec.out is None:
        raise SweepError(f"sweep {spec.path!r} names no [sweep] out; pass --out DIR")
    if executor not in ("local", "ray"):
        raise SweepError(f"--executor {executor!r} is not local|ray; pass --executor local or --executor ray")
    if threads < 1:
        raise SweepError(f"--threads {threads} must be at least 1")
    if executor == "ray":
        executors.ray_module()  # before any work: one line saying what to install
    target = Path(out if out is not None else spec.out)  # type: ignore[arg-type]
    result_file = experiments()[spec.experiment].result.FILE
    cells = spec.cells()
    fresh = SweepManifest(
        experiment=spec.experiment,
        sweep_file=str(Path(spec.path).resolve()),
        digest=spec.digest(),
        cells=tuple(CellRecord(c.id, dict(c.coordinates), training_step=c.training_step) for c in cells),
        executor=executor,
    )
    with OutputLock(target):
        manifest = merged(claim(target, spec, force), fresh, target)
        target.mkdir(parents=True, exist_ok=True)
        manifest.write(target)
        todo = [c for c in cells if manifest.cell(c.id).status != "done"]
        skipped = len(cells) - len(todo)
        if skipped:
            say(f"resuming: {skipped} of {len(cells)} cells finished before, {len(todo)} to run")
        tasks = [
            CellTask(
                experiment=spec.experiment,
                tables=spec.tables,
                sweep_file=str(Path(spec.path).resolve()),
                coordinates=located(c.coordinates),
                cell_id=c.id,
                directory=str(target / "cells" / c.id) if executor == "local" else None,
                parent=str(target),
                arrays=arrays,
                threads=threads,
            )
            for c in cells
            if c in todo
        ]
        started, running = time.perf_counter(), [0]
        done = failed = 0

        def start(task: CellTask) -> None:
            running[0] = 1 if executor == "local" else running[0] + 1
            if progress is not None:
                progress(done, failed, running[0], len(tasks), None)

        run = (
            executors.local(tasks, start)
            if executor == "local"
            else executors.on_ray(tasks, address, memory=lambda t: cell_memory(t.coordinates), on_start=start)
        )
        for outcome in run:
            cell_dir = target / "cells" / outcome.id
            if outcome.files is not None and outcome.error is None:
                write_files(outcome.files, cell_dir)
            manifest = manifest.with_cell(_record(manifest.cell(outcome.id), outcome, cell_dir, target, result_file))
            manifest.write(target)
            done, failed = done + (outcome.error is None), failed + (outcome.error is not None)
            running[0] = max(0, running[0] - 1) if executor == "ray" else 0
            if outcome.error is not None:
                say(f"cell {outcome.id} failed: {outcome.error}")
            if progress is not None:
                finished = done + failed
                eta = (time.perf_counter() - started) / finished * (len(tasks) - finished) if finished else None
                progress(done, failed, running[0], len(tasks), eta)
        from geoprobe.sweep.table import write_table

        if write_table(manifest, target) is None:
            say('sweep.parquet not written: it needs pyarrow (pip install "geoprobe-attention[ray]")')
        report = _page(manifest, target)
        if report is not None:
            say(f"wrote {report}")
    return manifest


def _page(manifest: SweepManifest, target: Path) -> Path | None:
    from geoprobe.sweep.report import write_page

    return write_page(manifest, target)


def status(directory: str | Path) -> SweepManifest:
    """The manifest of the sweep in ``directory`` (``geoprobe sweep status``)."""
    d = Path(directory)
    manifest = read_manifest(d) if d.is_dir() else None
    if manifest is None:
        raise SweepError(f"{str(d)!r} holds no sweep (no {MANIFEST}); pass the --out of a geoprobe sweep")
    return manifest


def summary(manifest: SweepManifest) -> list[dict[str, Any]]:
    """One row per cell for ``geoprobe sweep status``: id, status, seconds, coordinates, error."""
    return [
        {
            "cell": c.id,
            "status": c.status,
            "seconds": None if c.seconds is None else round(c.seconds, 1),
            **c.coordinates,
            "error": c.error or "",
        }
        for c in manifest.cells
    ]
