"""``OUT/sweep.json``: the sweep's manifest — every cell with its coordinates, status, one-line error,
attempts, the node that finished it, its parameter count and provenance — derived from the cells'
own records (geoprobe.sweep.directory), written when the sweep starts (after every cell was read) and
when it ends or stops. Nothing reads it to decide what to compute: a damaged or missing manifest is
rebuilt from the cells."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Mapping

from geoprobe.kinds import SWEEP_KIND
from geoprobe.results import Result
from geoprobe.serial import Record
from geoprobe.sweep.directory import CELLS, MANIFEST

Status = Literal["pending", "done", "failed"]
STATUSES: tuple[str, ...] = ("pending", "done", "failed")


@dataclass(frozen=True, eq=False)
class CellRecord(Record):
    """One cell of the manifest. ``result``: its results file relative to the sweep directory (done
    cells); ``error``: the one line it failed with; ``seconds``: its run time; ``attempts``: how many
    times a worker started it, over every run of the sweep (Ray starts a cell again when its worker or
    node dies); ``node``: the machine (and Ray node) that finished it; ``provenance``: model id, weights,
    prompts hash, seed and versions of its result."""

    id: str
    coordinates: dict[str, Any]
    status: Status = "pending"
    training_step: int | None = None
    n_params: int | None = None
    result: str | None = None
    error: str | None = None
    seconds: float | None = None
    attempts: int = 0
    node: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:  # a hand-edited manifest: read as damaged, then rebuilt from the cells
            raise ValueError(f"cell {self.id!r} has status {self.status!r}, not one of {', '.join(STATUSES)}")


@dataclass(frozen=True, eq=False)
class SweepManifest(Result):
    """The manifest: the experiment, the sweep file, its id (``uid``, the marker's) and the digest of what
    it computes, the coordinates whose cells are replicates, the executor of the last run, every cell, and
    the names of the coordinates."""

    KIND: ClassVar[str] = SWEEP_KIND
    VERSION: ClassVar[int] = 2
    FILE: ClassVar[str] = MANIFEST
    PAGE: ClassVar[str | None] = "sweep.html"
    WHAT: ClassVar[str] = "sweep manifest"

    experiment: str
    sweep_file: str
    digest: str
    cells: tuple[CellRecord, ...]
    executor: str = "local"
    uid: str = ""
    replicates: tuple[str, ...] = ()
    coordinates: tuple[str, ...] = ()  # every coordinate name, in canonical order

    def cell(self, cell_id: str) -> CellRecord:
        for c in self.cells:
            if c.id == cell_id:
                return c
        raise KeyError(cell_id)

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for c in self.cells:
            out[c.status] += 1
        return out

    def keys(self) -> list[str]:
        """Every coordinate name, in canonical order (a manifest that does not list them: as the cells have them)."""
        names: dict[str, None] = dict.fromkeys(self.coordinates)
        for c in self.cells:
            names.update(dict.fromkeys(c.coordinates))
        return list(names)

    def write(self, directory: Path) -> Path:
        """Write ``directory/sweep.json`` atomically."""
        return self.save(directory / MANIFEST)


def read_manifest(directory: Path) -> SweepManifest | None:
    """The manifest in ``directory``, None where there is none or it does not read (it is derived: the
    caller rebuilds it from the cells)."""
    from geoprobe.errors import ResultsError

    if not (directory / MANIFEST).is_file():
        return None
    try:
        return SweepManifest.load(directory / MANIFEST)
    except ResultsError:
        return None


def record_of(
    cell_id: str,
    coordinates: Mapping[str, Any],
    step: int | None,
    mark: Mapping[str, Any] | None,
    done: bool,
    result_file: str,
) -> CellRecord:
    """A cell's manifest record from its own record (.geoprobe-cell.json; None: never started) and whether
    it verified as done."""
    m = dict(mark or {})
    status: Status = "done" if done else ("failed" if m.get("status") == "failed" else "pending")
    return CellRecord(
        id=cell_id,
        coordinates=dict(coordinates),
        status=status,
        training_step=step,
        n_params=_int(m.get("n_params")),
        result=f"{CELLS}/{cell_id}/{result_file}" if done else None,
        error=str(m["error"]) if status == "failed" and m.get("error") else None,
        seconds=_float(m.get("seconds")),
        attempts=_int(m.get("attempts")) or 0,
        node=str(m["node"]) if m.get("node") else None,
        provenance=dict(m["provenance"]) if isinstance(m.get("provenance"), dict) else {},
    )


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _float(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None
