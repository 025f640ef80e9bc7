"""``geoprobe sweep status OUT``: where a sweep stands, read from its cells (the truth), not from its
manifest alone: every cell of its sweep file (or, when that file is gone or changed, of its manifest, or
else the cells found on disk), each with the status its own record and files give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from geoprobe.errors import SweepError
from geoprobe.sweep.directory import CELLS, identity, inspect_cell, read_cell_mark
from geoprobe.sweep.manifest import CellRecord, SweepManifest, read_manifest, record_of
from geoprobe.sweep.plan import Cell, Plan, make_plan, training_step
from geoprobe.sweep.spec import read_sweep


def _plan(sweep_file: str, digest: str | None) -> Plan | None:
    try:
        plan = make_plan(read_sweep(sweep_file), here=False)
    except Exception:  # noqa: BLE001 - the sweep file is gone, changed or unreadable here: use what is on disk
        return None
    return plan if plan.digest == digest else None


def status(directory: str | Path) -> SweepManifest:
    """The manifest of the sweep in ``directory``, each cell's status read from its own directory."""
    from geoprobe.checks import name_arg
    from geoprobe.kinds import directory_kind
    from geoprobe.recipes import experiment_named

    d = Path(name_arg(directory, "directory", "a sweep's --out"))
    kind = directory_kind(d)
    ident = identity(d) if kind is not None and kind.is_sweep else None
    if ident is None:
        raise SweepError(
            f"{str(d)!r} holds no sweep (no readable .geoprobe-sweep.json or sweep.json); pass the --out of a "
            "geoprobe sweep"
        )
    old = read_manifest(d)
    uid = ident.uid or (old.uid if old is not None else "")
    exp = experiment_named(ident.experiment)
    result_cls = exp.result if exp is not None else None
    plan = _plan(ident.sweep_file, ident.digest)
    if plan is not None and result_cls is not None:
        cells = [
            record_of(c.id, c.coordinates, c.training_step, st.mark, st.state == "done", result_cls.FILE)
            for c in plan.cells
            for st in [inspect_cell(d, plan, c, uid, result_cls, deep=False)]
        ]
    elif old is not None:
        cells = [_from_disk(d, r.id, r.coordinates, r, uid, result_cls) for r in old.cells]
    else:
        cells = []
        for p in sorted((d / CELLS).iterdir() if (d / CELLS).is_dir() else []):
            mark = read_cell_mark(p) if p.is_dir() and not p.is_symlink() else None
            if mark is not None and mark.get("sweep") == uid:
                cells.append(_from_disk(d, p.name, mark.get("coordinates") or {}, None, uid, result_cls))
    return SweepManifest(
        experiment=ident.experiment,
        sweep_file=ident.sweep_file,
        digest=ident.digest or "",
        cells=tuple(cells),
        executor=old.executor if old is not None else "local",
        uid=uid or "",
        replicates=plan.spec.replicates if plan is not None else old.replicates if old is not None else (),
        coordinates=plan.keys if plan is not None else old.coordinates if old is not None else (),
    )


def _from_disk(
    d: Path, cell_id: str, coordinates: Any, old: CellRecord | None, uid: str, result_cls: Any
) -> CellRecord:
    from geoprobe.rundir import recorded_request

    mark = read_cell_mark(d / CELLS / cell_id)
    ours = mark is not None and mark.get("sweep") == uid
    done = bool(ours and result_cls is not None and recorded_request(d / CELLS / cell_id, result_cls.FILE) is not None)
    step = training_step(coordinates.get("revision")) if isinstance(coordinates, dict) else None
    return record_of(cell_id, dict(coordinates), step, mark if ours else None, done, getattr(result_cls, "FILE", ""))


def summary(manifest: SweepManifest) -> list[dict[str, Any]]:
    """One row per cell for ``geoprobe sweep status``: id, status, seconds, attempts, every coordinate of the
    sweep (blank where a cell has none, so that the columns line up), error."""
    keys = manifest.keys()
    return [
        {
            "cell": c.id,
            "status": c.status,
            "seconds": None if c.seconds is None else round(c.seconds, 1),
            "attempts": c.attempts,
            **{k: c.coordinates.get(k, "") for k in keys},
            "error": c.error or "",
        }
        for c in manifest.cells
    ]


__all__ = ["Cell", "status", "summary"]
