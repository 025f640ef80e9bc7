"""One cell of a sweep, run where an executor places it: the experiment's recipe with the cell's
coordinates set, through the experiment's own ``run`` (the same code as ``geoprobe run`` and
:func:`geoprobe.run`). A failure of the cell itself (a model that cannot load, a bad setting) is caught
and returned as its one-line error, so an executor never retries it; only a worker or node that dies
makes Ray run the cell again.

A cell's life in its run directory: its record (``.geoprobe-cell.json``, status ``running``) is written
first, then again once its model is loaded (its parameter count), then the experiment writes its run
(data, results, run record, page); the driver writes the record's final status last. Killed at any of
these points, the rerun finds the cell's own record and verifies or recomputes it
(geoprobe.sweep.directory)."""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
import traceback
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from geoprobe.kinds import CELL_MARK, RECORD
from geoprobe.sweep.plan import split

#: files of a cell's run directory that are data (arrays), sent back from a worker only with ``arrays``
DATA_DIRS = ("capture", "capture.partial")
#: the prefix of a cell's scratch directory on a Ray worker: ``geoprobe-cell-<sweep uid[:12]>-<cell id>-*``
SCRATCH = "geoprobe-cell-"


def sweep_scratch(uid: str) -> str:
    """The prefix of every scratch directory of one sweep's cells (``geoprobe-cell-<uid[:12]>-``)."""
    return f"{SCRATCH}{uid[:12]}-"


@dataclass(frozen=True)
class CellTask:
    """What a worker needs to run one cell (picklable; no path on the driver's disk is read there but
    those the recipe itself names). ``directory``: where to write the run (the local executor: the cell's
    final directory); None: a scratch directory on the worker, whose files come back in the outcome.
    ``mark``: the cell's record (.geoprobe-cell.json) as the driver starts it; ``force``: the cell's
    directory holds earlier results of its own that did not verify, which the run replaces. ``plotlyjs``:
    the relative URL of the sweep's one plotly.js that the cell's page loads (None: the page inlines it)."""

    experiment: str
    tables: Mapping[str, Any]
    sweep_file: str
    coordinates: Mapping[str, Any]
    cell_id: str
    directory: str | None = None
    parent: str | None = None
    arrays: bool = False
    threads: int = 1
    mark: Mapping[str, Any] = field(default_factory=dict)
    force: bool = False
    plotlyjs: str | None = None

    @property
    def scratch_prefix(self) -> str:
        return f"{sweep_scratch(str(self.mark.get('sweep', '')))}{self.cell_id}-"


@dataclass(frozen=True)
class CellOutcome:
    """What a cell returns to the driver: ``error`` (None: done), the seconds it ran, where (machine and
    Ray node), its parameter count, its provenance, its run's files (path -> bytes, from a scratch
    directory), and ``attempt``: which start of the cell this was (Ray: counted by the driver's log)."""

    id: str
    error: str | None
    seconds: float
    node: str
    n_params: int | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, bytes] | None = None
    attempt: int | None = None


def count_parameters(model: Any) -> int | None:
    """Parameters of a loaded model (tied embeddings counted once), None without one."""
    hf = getattr(model, "hf_model", None)
    if hf is None:
        return None
    return sum(p.numel() for p in {id(p): p for p in hf.parameters()}.values())


def error_line(exc: BaseException) -> str:
    """A cell's failure in one line: geoprobe's own message, else the exception, its text and where."""
    from geoprobe.errors import GeoprobeError

    text = " ".join(str(exc).split())
    if isinstance(exc, GeoprobeError):
        return text
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" ({Path(where.filename).name}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {text[:300]}{at}"


def _files(run_dir: Path, arrays: bool) -> dict[str, bytes]:
    out = {}
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir)
        if p.is_file() and not p.is_symlink() and (arrays or rel.parts[0] not in DATA_DIRS):
            out[str(rel)] = p.read_bytes()
    return out


def node_name() -> str:
    """This machine, and on a Ray worker its node's id: ``vm (node 1a2b3c4d)``."""
    try:
        import ray

        if ray.is_initialized():
            return f"{platform.node()} (node {ray.get_runtime_context().get_node_id()[:8]})"
    except Exception:  # noqa: BLE001 - Ray absent or not a worker: the machine alone
        pass
    return platform.node()


def run_cell(task: CellTask) -> CellOutcome:
    """Run ``task``'s cell; never raises for the cell's own failures (they are its ``error``)."""
    from threadpoolctl import threadpool_limits

    from geoprobe.experiment import OutputOptions
    from geoprobe.models.loaded import timed
    from geoprobe.models.loading import LoadOptions, load_fields
    from geoprobe.paths import write_json
    from geoprobe.recipes import experiment
    from geoprobe.threads import torch_threads

    t0, node = time.perf_counter(), node_name()
    scratch = None if task.directory is not None else Path(tempfile.mkdtemp(prefix=task.scratch_prefix))
    run_dir = Path(task.directory) if task.directory is not None else scratch / task.cell_id  # type: ignore[operator]
    limits = ExitStack()  # the cell's CPU threads: torch's and the BLAS/OpenMP pools (numpy, scikit-learn)
    mark = dict(task.mark)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        if mark:
            write_json(run_dir / CELL_MARK, {**mark, "node": node})
        limits.enter_context(torch_threads(max(1, task.threads)))
        limits.enter_context(threadpool_limits(limits=max(1, task.threads)))
        exp = experiment(task.experiment)
        config = exp.config.from_tables(dict(task.tables), Path(task.sweep_file))
        load, rest = split(task.coordinates, {f.name for f in load_fields()})
        config = exp.changed(config, **rest)
        options = LoadOptions(**load) if exp.loads else None
        model: Any = options
        n_params = None
        if options is not None and exp.model_given:  # loaded here, to count its parameters
            model = timed(options.check().load)  # its load_s: the load time the cell's results record
            n_params = count_parameters(model)
            if mark:
                write_json(run_dir / CELL_MARK, {**mark, "node": node, "n_params": n_params})
        parent = Path(task.parent) if task.parent and task.directory else None
        out = OutputOptions(out=run_dir, parent=parent, force=task.force, plotlyjs=task.plotlyjs)
        result = exp.run(config, model=model, out=out)
        prov = getattr(result, "provenance", None)
        prov = prov.to_dict() if hasattr(prov, "to_dict") else dict(prov or {})
        files = None if task.directory is not None else _files(run_dir, task.arrays)
        return CellOutcome(task.cell_id, None, time.perf_counter() - t0, node, n_params, prov, files)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the cell's own failure: recorded, never retried
        return CellOutcome(task.cell_id, error_line(exc), time.perf_counter() - t0, node)
    finally:
        limits.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def write_files(files: Mapping[str, bytes], run_dir: Path) -> None:
    """Write a worker's run files into ``run_dir`` on the driver. A new directory is written whole (into a
    temporary directory beside it, renamed into place). Into an existing one (the cell's own, the driver has
    checked) each entry is renamed into place, the cell's record last, and what an earlier attempt of the
    cell left that this one did not write is removed; entries the sweep did not write stay."""
    from geoprobe.paths import public_mode
    from geoprobe.sweep.directory import owned_name

    run_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.tmp-", dir=run_dir.parent))
    try:
        os.chmod(tmp, public_mode(directory=True))  # mkdtemp makes it private; a run directory follows the umask
        for rel, data in files.items():
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        if not run_dir.exists():
            os.replace(tmp, run_dir)
            return
        new = sorted(os.listdir(tmp), key=lambda n: (n == CELL_MARK, n == RECORD))  # the records last
        for name in os.listdir(run_dir):
            if owned_name(name) and name not in new and name != CELL_MARK:
                _remove(run_dir / name)
        for name in new:
            if (run_dir / name).is_dir() and not (run_dir / name).is_symlink():
                _remove(run_dir / name)
            os.replace(tmp / name, run_dir / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink(missing_ok=True)


def remove_scratch(prefix: str) -> int:
    """Remove this machine's scratch directories of a sweep's cells (``prefix``: ``geoprobe-cell-<uid>-``)
    in the temporary directory; returns how many. Run on every node when a Ray sweep stops."""
    base = Path(tempfile.gettempdir())
    n = 0
    for p in base.glob(f"{prefix}*"):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
            n += 1
    return n
