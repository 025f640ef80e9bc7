"""One cell of a sweep, run where an executor places it: the experiment's recipe with the cell's
coordinates set, through the experiment's own ``run`` (the same code as ``geoprobe run`` and
:func:`geoprobe.run`). A failure of the cell itself (a model that cannot load, a bad setting) is caught
and returned as its one-line error, so an executor never retries it; only a worker or node that dies
makes Ray run the cell again."""

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

#: files of a cell's run directory that are data (arrays), sent back from a worker only with ``arrays``
DATA_DIRS = ("capture", "capture.partial")


@dataclass(frozen=True)
class CellTask:
    """What a worker needs to run one cell (picklable; no path on the driver's disk is read there but
    those the recipe itself names). ``directory``: where to write the run (the local executor: the cell's
    final directory); None: a scratch directory on the worker, whose files come back in the outcome."""

    experiment: str
    tables: Mapping[str, Any]
    sweep_file: str
    coordinates: Mapping[str, Any]
    cell_id: str
    directory: str | None = None
    parent: str | None = None
    arrays: bool = False
    threads: int = 1


@dataclass(frozen=True)
class CellOutcome:
    """What a cell returns to the driver: ``error`` (None: done), the seconds it ran, where, its
    parameter count, its provenance, and (from a scratch directory) its run's files, path -> bytes."""

    id: str
    error: str | None
    seconds: float
    node: str
    n_params: int | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, bytes] | None = None


def split(coordinates: Mapping[str, Any], load_names: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(loading settings, config settings) of a cell; a ``revision`` that is a local directory is the
    model to load (a checkpoint of a series), the ``model`` coordinate then only names the series."""
    load = {k: v for k, v in coordinates.items() if k in load_names}
    rest = {k: v for k, v in coordinates.items() if k not in load_names}
    rev = load.get("revision")
    if isinstance(rev, str) and Path(rev).expanduser().is_dir():
        load["model"], load["revision"] = str(Path(rev).expanduser()), None
    return load, rest


def located(coordinates: Mapping[str, Any]) -> dict[str, Any]:
    """The coordinates a cell is sent with: a ``revision`` or ``model`` naming a directory here, relative
    to the driver's working directory (where ``load_model`` would look first), made absolute, so that a Ray
    worker (whose working directory is its own) loads the same directory where the filesystem is shared."""
    sent = dict(coordinates)
    for key in ("revision", "model"):
        v = sent.get(key)
        if isinstance(v, str) and Path(v).expanduser().is_dir():
            sent[key] = str(Path(v).expanduser().resolve())
    return sent


def count_parameters(model: Any) -> int | None:
    """Parameters of a loaded model (tied embeddings counted once), None without one."""
    hf = getattr(model, "hf_model", None)
    if hf is None:
        return None
    return sum(p.numel() for p in {id(p): p for p in hf.parameters()}.values())


def _error_line(exc: BaseException) -> str:
    from geoprobe.errors import GeoprobeError

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, GeoprobeError):
        return text
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" ({Path(where.filename).name}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {text}{at}"


def _files(run_dir: Path, arrays: bool) -> dict[str, bytes]:
    out = {}
    for p in sorted(run_dir.rglob("*")):
        rel = p.relative_to(run_dir)
        if p.is_file() and not p.is_symlink() and (arrays or rel.parts[0] not in DATA_DIRS):
            out[str(rel)] = p.read_bytes()
    return out


def run_cell(task: CellTask) -> CellOutcome:
    """Run ``task``'s cell; never raises for the cell's own failures (they are its ``error``)."""
    from threadpoolctl import threadpool_limits

    from geoprobe.experiment import OutputOptions
    from geoprobe.models.loading import LoadOptions, load_fields
    from geoprobe.recipes import experiment
    from geoprobe.threads import torch_threads

    t0, node = time.perf_counter(), platform.node()
    scratch = None if task.directory is not None else Path(tempfile.mkdtemp(prefix=f"geoprobe-cell-{task.cell_id}-"))
    run_dir = Path(task.directory) if task.directory is not None else scratch / task.cell_id
    limits = ExitStack()  # the cell's CPU threads: torch's and the BLAS/OpenMP pools (numpy, scikit-learn)
    try:
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
            model = options.check().load()
            n_params = count_parameters(model)
        out = OutputOptions(out=run_dir, parent=Path(task.parent) if task.parent and task.directory else None)
        result = exp.run(config, model=model, out=out)
        prov = getattr(result, "provenance", None)
        prov = prov.to_dict() if hasattr(prov, "to_dict") else dict(prov or {})
        files = None if task.directory is not None else _files(run_dir, task.arrays)
        return CellOutcome(task.cell_id, None, time.perf_counter() - t0, node, n_params, prov, files)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the cell's own failure: recorded, never retried
        return CellOutcome(task.cell_id, _error_line(exc), time.perf_counter() - t0, node)
    finally:
        limits.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def write_files(files: Mapping[str, bytes], run_dir: Path) -> None:
    """Write a worker's run files into ``run_dir`` on the driver, whole: into a temporary directory
    beside it, renamed into place (an earlier partial directory of this cell is replaced)."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    from geoprobe.paths import public_mode

    tmp = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.tmp-", dir=run_dir.parent))
    try:
        os.chmod(tmp, public_mode(directory=True))  # mkdtemp makes it private; a run directory follows the umask
        for rel, data in files.items():
            p = tmp / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        if run_dir.exists():
            old = run_dir.with_name(f".{run_dir.name}.old-{os.getpid()}")
            os.replace(run_dir, old)
            os.replace(tmp, run_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, run_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
