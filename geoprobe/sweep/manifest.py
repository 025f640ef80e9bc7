"""``OUT/sweep.json``: the sweep's manifest — every cell with its coordinates, status, one-line error,
timings and provenance — rewritten atomically after each cell, so an interrupted sweep knows what it
finished. A rerun skips the cells marked done whose results file is there and computes the rest."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, Mapping

from geoprobe.errors import ResultsError, SweepError
from geoprobe.results import Result
from geoprobe.serial import Record

Status = Literal["pending", "done", "failed"]
SWEEP_KIND = "geoprobe.sweep"
MANIFEST = "sweep.json"


@dataclass(frozen=True, eq=False)
class CellRecord(Record):
    """One cell of the manifest. ``result``: its results file relative to the sweep directory (done
    cells); ``error``: the one line it failed with; ``seconds``: its run time; ``attempts``: how many
    times a worker started it (Ray retries a cell whose worker or node died); ``node``: where it ran;
    ``provenance``: model id, weights, prompts hash, seed and versions of its result."""

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


@dataclass(frozen=True, eq=False)
class SweepManifest(Result):
    """The manifest: the experiment, the sweep file and the digest of what it computes
    (:meth:`geoprobe.sweep.spec.SweepSpec.digest`), the executor of the last run, and every cell."""

    KIND: ClassVar[str] = SWEEP_KIND
    FILE: ClassVar[str] = MANIFEST
    PAGE: ClassVar[str | None] = "sweep.html"
    WHAT: ClassVar[str] = "sweep manifest"

    experiment: str
    sweep_file: str
    digest: str
    cells: tuple[CellRecord, ...]
    executor: str = "local"

    def cell(self, cell_id: str) -> CellRecord:
        for c in self.cells:
            if c.id == cell_id:
                return c
        raise KeyError(cell_id)

    def with_cell(self, record: CellRecord) -> "SweepManifest":
        """The manifest with ``record`` in place of the cell of the same id."""
        return replace(self, cells=tuple(record if c.id == record.id else c for c in self.cells))

    def counts(self) -> dict[str, int]:
        out = {"done": 0, "failed": 0, "pending": 0}
        for c in self.cells:
            out[c.status] += 1
        return out

    def write(self, directory: Path) -> Path:
        """Write ``directory/sweep.json`` atomically."""
        return self.save(directory / MANIFEST)


def read_manifest(directory: Path) -> SweepManifest | None:
    """The manifest in ``directory``, None where there is none; a damaged one is a one-line error."""
    if not (directory / MANIFEST).exists():
        return None
    try:
        return SweepManifest.load(directory / MANIFEST)
    except ResultsError as exc:
        raise SweepError(f"{exc}; or pass --force to start the sweep again") from None


def merged(old: SweepManifest | None, fresh: SweepManifest, directory: Path) -> SweepManifest:
    """``fresh`` (every cell pending) with what ``old`` finished: a cell done before, whose results file is
    still there, stays done; everything else (failed, interrupted, removed) is computed again."""
    if old is None:
        return fresh
    before: Mapping[str, CellRecord] = {c.id: c for c in old.cells}
    cells = []
    for c in fresh.cells:
        prev = before.get(c.id)
        kept = prev is not None and prev.status == "done" and prev.result and (directory / prev.result).is_file()
        cells.append(prev if kept else c)
    return replace(fresh, cells=tuple(cells))
