"""A sweep's directory, held to the contract of every geoprobe output (docs/outputs.md, docs/sweep.md):

```
OUT/.geoprobe-sweep.json   the marker: the sweep's id (random, made once), experiment and settings digest
OUT/sweep.json             the manifest: derived from the cells, written at the start and the end
OUT/sweep.parquet          the tidy table, from verified cells only
OUT/sweep.html             the page
OUT/plotly.min.js          the one copy of plotly.js that every page of the sweep loads (issue 39)
OUT/cells/<id>/            each cell: an ordinary run directory, plus .geoprobe-cell.json
```

**The cells are the truth.** Before a cell's run starts, ``.geoprobe-cell.json`` is written into its
directory: the sweep's id, the cell's id, coordinates and settings digest, its status and attempts. A
rerun reads every cell (:func:`inspect_cell`): one whose record names this sweep and these coordinates,
whose results file matches its run record (sha256) and reads, and whose results were made from these
coordinates (model, dtype, revision, seed, settings) is done, whatever the manifest said; one of this
sweep's that does not verify is computed again, with one line saying why; a directory that does not
carry this sweep's record is another's and is never written to or deleted (the cell fails, naming it).

**Ownership.** ``--force`` removes only what carries this sweep's mark: its own files at the top and
the cell directories whose record names this sweep (refused, before anything is removed, when one of
them holds a file the sweep did not write). Anything else in OUT or OUT/cells stays. A ``cells`` that is
a symbolic link, or not a directory, is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Mapping

from geoprobe.errors import ForeignOutputError, GeoprobeError, ResultsError, SweepError
from geoprobe.kinds import (
    CELL_MARK,
    CELL_MARK_KIND,
    PAGE_KIND,
    RECORD,
    SWEEP_KIND,
    SWEEP_MARK,
    SWEEP_MARK_KIND,
    TABLE_KIND,
    file_kind,
)
from geoprobe.outputs import FIGURES_DIR, LOCK_SUFFIX, OutputLock, shown
from geoprobe.paths import read_regular, write_json
from geoprobe.sweep.plan import Cell, Plan, canonical_json, expected_model_id, expected_weight_seed, located

CELLS = "cells"
MANIFEST = "sweep.json"
#: what a sweep directory holds besides its cells (the marker first)
SWEEP_FILES = (SWEEP_MARK, MANIFEST, "sweep.parquet", "sweep.html", "emergence.parquet")
#: the one plotly.js of a sweep's pages, in OUT; a cell's page (OUT/cells/<id>/<page>) loads it by CELL_PLOTLYJS
PLOTLYJS = "plotly.min.js"
CELL_PLOTLYJS = f"../../{PLOTLYJS}"
#: a cell's state on disk: absent; this sweep's but not (or not yet) a verified run; done; not this sweep's
State = Literal["absent", "ours", "done", "foreign"]


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_json_file(path: Path) -> Any:
    """The JSON in regular file ``path`` (never waiting on a FIFO), or None when missing or unreadable."""
    try:
        return json.loads(read_regular(path, ValueError, limit=64 << 20))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------- the sweep's identity
@dataclass(frozen=True)
class Identity:
    """Which sweep a directory holds: its ``uid``, experiment and settings digest (None: a sweep written
    before sweeps had a marker), and what it was read from (``source``)."""

    uid: str | None
    experiment: str
    digest: str | None
    sweep_file: str
    source: str


def identity(out: Path) -> Identity | None:
    """The identity of the sweep in ``out``: from its marker, else from its manifest (one written before
    sweeps had markers: uid and digest None); None when neither is readable."""
    mark = read_json_file(out / SWEEP_MARK)
    if isinstance(mark, dict) and mark.get("kind") == SWEEP_MARK_KIND and isinstance(mark.get("uid"), str):
        return Identity(
            mark["uid"], str(mark.get("experiment")), mark.get("digest"), str(mark.get("sweep_file")), SWEEP_MARK
        )
    d = read_json_file(out / MANIFEST)
    if isinstance(d, dict) and d.get("kind") == SWEEP_KIND and isinstance(d.get("experiment"), str):
        uid = d.get("uid") if isinstance(d.get("uid"), str) else None
        return Identity(uid, d["experiment"], d.get("digest") if uid else None, str(d.get("sweep_file")), MANIFEST)
    return None


def write_identity(out: Path, plan: Plan, uid: str) -> None:
    write_json(
        out / SWEEP_MARK,
        {
            "kind": SWEEP_MARK_KIND,
            "version": 1,
            "uid": uid,
            "experiment": plan.experiment,
            "digest": plan.digest,
            "sweep_file": str(Path(plan.spec.path).resolve()),
            "created": now(),
        },
    )


def new_uid() -> str:
    return uuid.uuid4().hex


# ---------------------------------------------------------------------------------- cells
def cell_dir(out: Path, cell_id: str) -> Path:
    return out / CELLS / cell_id


def read_cell_mark(directory: Path) -> dict[str, Any] | None:
    d = read_json_file(directory / CELL_MARK)
    return d if isinstance(d, dict) and d.get("kind") == CELL_MARK_KIND else None


def cell_mark(plan: Plan, cell: Cell, uid: str, **fields: Any) -> dict[str, Any]:
    """A cell's record (.geoprobe-cell.json): its sweep, id, coordinates, settings digest, then ``fields``."""
    return {
        "kind": CELL_MARK_KIND,
        "version": 1,
        "sweep": uid,
        "id": cell.id,
        "coordinates": cell.as_json(),
        "digest": plan.cell_digest(cell),
        **fields,
    }


def write_cell_mark(directory: Path, mark: Mapping[str, Any]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    write_json(directory / CELL_MARK, dict(mark))


@dataclass(frozen=True)
class CellState:
    """What :func:`inspect_cell` found: the ``state``, the line saying why a cell of this sweep is computed
    again or why a directory is not this sweep's (``why``), the cell's record, and whether the next run of
    the cell must replace its own earlier results (``force``)."""

    state: State
    why: str | None = None
    mark: Mapping[str, Any] | None = field(default=None)
    force: bool = False


def _stray(name: str) -> bool:
    return name.startswith(".")


def inspect_cell(out: Path, plan: Plan, cell: Cell, uid: str, result_cls: type, *, deep: bool = True) -> CellState:
    """The state of ``cell`` on disk (module docs). ``deep``: also read its results and compare them with
    its coordinates (``geoprobe sweep status`` looks only at records and files)."""
    from geoprobe.rundir import recorded_request

    d = cell_dir(out, cell.id)
    if not os.path.lexists(d):
        return CellState("absent")
    where = shown(d.resolve()) if not d.is_symlink() else str(d)
    if d.is_symlink() or not d.is_dir():
        what = "a symbolic link" if d.is_symlink() else "not a directory"
        return CellState("foreign", f"{where} is {what}; geoprobe never writes through it: move it away and rerun")
    mark = read_cell_mark(d)
    if mark is None:
        if not [n for n in _listdir(d) if not _stray(n)]:
            return CellState("ours")  # an empty directory: made, then stopped before its record
        return CellState(
            "foreign",
            f"{where} holds files this sweep did not write (no {CELL_MARK} of its own); move it away and rerun",
        )
    if mark.get("sweep") != uid:
        return CellState(
            "foreign", f"{where} is a cell of another sweep (id {str(mark.get('sweep'))[:8]}); move it away"
        )
    if mark.get("id") != cell.id or canonical_json(mark.get("coordinates")) != canonical_json(cell.as_json()):
        return CellState("ours", f"{where}: its record names other coordinates; computing it again", mark, True)
    if mark.get("digest") != plan.cell_digest(cell):
        return CellState("ours", f"{where}: its record names other settings; computing it again", mark, True)
    result = d / result_cls.FILE
    if result.is_symlink():
        return CellState(
            "foreign",
            f"{where}: its {result_cls.FILE} is a symbolic link; geoprobe reads no results "
            "through one: move it away and rerun",
            mark,
        )
    if not result.exists():
        said = (
            f"{where}: its {result_cls.FILE} is missing; computing it again" if mark.get("status") == "done" else None
        )
        # what an earlier run of the cell wrote (a capture, a page) is replaced; its resumable state is kept
        earlier = [n for n in _listdir(d) if not _stray(n) and not n.endswith(".partial")]
        return CellState("ours", said, mark, bool(earlier))
    if recorded_request(d, result_cls.FILE) is None:
        return CellState(
            "ours",
            f"{where}: its {result_cls.FILE} has no matching run record (the run stopped before recording it, or "
            "the file changed since); computing it again",
            mark,
            True,
        )
    if not deep:
        return CellState("done", None, mark)
    try:
        loaded = result_cls.load(result)
    except ResultsError as exc:
        return CellState("ours", f"{where}: {exc}; computing it again", mark, True)
    wrong = mismatch(loaded, cell)
    if wrong is not None:
        return CellState("ours", f"{where}: its results are {wrong}; computing it again", mark, True)
    page = getattr(result_cls, "PAGE", None)
    if page is not None and not (d / page).is_file():
        return CellState("ours", f"{where}: its page is missing; writing it from its results", mark, False)
    return CellState("done", None, mark)


def _listdir(d: Path) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []


def mismatch(result: Any, cell: Cell) -> str | None:
    """How a cell's results differ from its coordinates ("of model 'twin:llama-3.2-1b:tiny', not …"), or
    None: the settings its config records, and the model, dtype, revision and seed its provenance records."""
    config = getattr(result, "config", None)
    prov = getattr(result, "provenance", None)
    prov = prov if isinstance(prov, Mapping) else getattr(prov, "__dict__", {})
    coords = cell.coordinates
    for key, value in coords.items():
        if isinstance(config, Mapping) and key in config:
            got = config[key]
        elif config is not None and not isinstance(config, Mapping) and hasattr(config, key):
            got = getattr(config, key)
        else:
            continue
        if canonical_json(got) != canonical_json(value):
            return f"made with {key} = {got!r}, not {value!r}"
    if not prov:
        return None
    want = expected_model_id(located(coords))
    if want is not None and prov.get("model_id") not in (None, want):
        return f"of model {prov.get('model_id')!r}, not {want!r}"
    if "dtype" in coords and prov.get("dtype") not in (None, coords["dtype"]):
        return f"in dtype {prov.get('dtype')!r}, not {coords['dtype']!r}"
    rev = coords.get("revision")
    weights = str(prov.get("weights") or "")
    if isinstance(rev, str) and prov.get("source") == "hub" and not weights.startswith(f"{rev}@"):
        return f"of weights {weights!r}, not revision {rev!r}"
    if "seed" in coords and prov.get("seed") is not None and prov["seed"] != coords["seed"]:
        return f"of seed {prov['seed']!r}, not {coords['seed']!r}"
    seed, got = expected_weight_seed(coords), prov.get("weight_seed")
    if got is None and weights.startswith("random-init seed="):  # results written before weight_seed was
        got = int(weights.removeprefix("random-init seed=")) if weights[17:].isdigit() else weights
    if seed is not None and got is not None and got != seed:
        return f"of a twin of weight seed {got!r}, not {seed!r}"
    return None


# ---------------------------------------------------------------------------------- claiming OUT
@dataclass
class Claim:
    """What :func:`survey` decided for OUT: ``uid`` (the sweep's id; new when it starts afresh), whether it
    is ``new`` (no sweep there yet, or one that ``--force`` starts again), what ``--force`` removes first
    (``remove``), and a line to say (a manifest rebuilt, a sweep started again)."""

    uid: str
    new: bool
    remove: list[Path] = field(default_factory=list)
    said: list[str] = field(default_factory=list)


def check_cells_dir(out: Path) -> None:
    c = out / CELLS
    if c.is_symlink() or (c.exists() and not c.is_dir()):
        what = f"a symbolic link to {os.readlink(c)!r}" if c.is_symlink() else "not a directory"
        raise SweepError(
            f"{str(c)!r} is {what}; a sweep writes its cells only into its own directory: remove it and rerun"
        )


def survey(out: Path, plan: Plan, force: bool) -> Claim:
    """Decide, reading only, what the sweep does with OUT (module docs); refuse in one line before
    anything is written: OUT of another kind, a sweep of other settings without ``force``, foreign
    entries where the sweep would write, a ``cells`` that is a link."""
    from geoprobe.kinds import directory_kind
    from geoprobe.outputs import refuse_foreign
    from geoprobe.report.page import plotlyjs_is_ours

    if not out.exists():
        return Claim(new_uid(), True)
    kind = directory_kind(out)
    if kind is None:
        if (out / SWEEP_MARK).exists() or (out / MANIFEST).exists():
            raise SweepError(
                f"{str(out)!r} holds a {SWEEP_MARK} and {MANIFEST} that neither read as a sweep's: geoprobe cannot "
                "tell this sweep is its own, and removes nothing; move the directory away or choose another --out"
            )
        others = [p for p in sorted(out.iterdir()) if not p.name.startswith(".")]
        if others:
            refuse_foreign(others[0], "files in a directory that is not a sweep's")
        return Claim(new_uid(), True)
    check_cells_dir(out)
    for name, want in (("sweep.html", PAGE_KIND), ("sweep.parquet", TABLE_KIND), (MANIFEST, None)):
        p = out / name
        if os.path.lexists(p) and (p.is_symlink() or not p.is_file() or (want and file_kind(p) != want)):
            refuse_foreign(p, "a file where the sweep writes its own")
    if os.path.lexists(out / PLOTLYJS) and not plotlyjs_is_ours(out / PLOTLYJS):
        refuse_foreign(out / PLOTLYJS, "a file where the sweep writes its pages' shared plotly.js")
    ident = identity(out)
    assert ident is not None  # directory_kind found a sweep marker or manifest
    said = []
    if ident.source == MANIFEST and ident.uid is not None:
        said.append(f"{SWEEP_MARK} was missing or damaged; its sweep read from {MANIFEST}")
    same = ident.uid is not None and ident.digest == plan.digest and ident.experiment == plan.experiment
    if same and not force:
        return Claim(ident.uid, False, said=said)  # type: ignore[arg-type]
    if not force:
        old = "an earlier geoprobe" if ident.uid is None else "other settings"
        raise SweepError(
            f"{str(out)!r} holds a sweep of {old} (from {shown(Path(ident.sweep_file))!r}); pass --force to start it "
            "again (only the sweep's own files are removed) or choose another --out"
        )
    return Claim(new_uid(), True, remove=owned(out, ident), said=[f"--force: starting {str(out)!r} again"])


def owned(out: Path, ident: Identity) -> list[Path]:
    """What --force removes of the sweep ``ident`` in ``out``: its table and page, its cell directories
    (and their leftover temporaries). Refused, before anything is removed, when a cell directory of it
    holds an entry the sweep did not write."""
    listed = set()
    if ident.uid is None:  # written before cells had records: the cells its manifest lists are its own
        d = read_json_file(out / MANIFEST) or {}
        listed = {c.get("id") for c in d.get("cells", []) if isinstance(c, dict)}
    # the marker and the manifest are not removed but rewritten (the marker first): a kill part-way through
    # --force leaves a directory that still reads as this sweep's, so the same command can finish it
    kept = (SWEEP_MARK, MANIFEST)
    paths = [out / n for n in SWEEP_FILES if n not in kept and (out / n).is_file() and file_kind(out / n) is not None]
    for entry in sorted(_listdir(out / CELLS)):
        p = out / CELLS / entry
        if p.is_symlink() or not p.is_dir():
            continue
        mark = read_cell_mark(p)
        base = entry.split(".tmp-")[0].split(".old-")[0].lstrip(".")
        ours = (mark is not None and mark.get("sweep") == ident.uid and ident.uid is not None) or (
            ident.uid is None and base in listed and (p / RECORD).is_file()
        )
        if not ours:
            continue
        foreign = [n for n in _listdir(p) if not owned_name(n)]
        if foreign:
            raise ForeignOutputError(
                f"{str(p / foreign[0])!r} is not the sweep's own (its cell's run does not write it); --force removes "
                "only what the sweep wrote: move it away, then rerun"
            )
        paths.append(p)
    return paths


def owned_name(name: str) -> bool:
    """Whether a cell directory's entry is one an experiment's run writes (results, page, data, partial
    state, figures, records) or a temporary of geoprobe's."""
    from geoprobe.recipes import experiments

    if name.startswith(".") or name in (FIGURES_DIR, "capture", "capture.partial") or name.endswith(".partial"):
        return True
    known = {n for e in experiments().values() for cls in e.results for n in (cls.FILE, cls.PAGE) if n}
    return name in known or name in ("prompts.jsonl", "checkpoints", "resume")


def remove(paths: list[Path]) -> None:
    for p in paths:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)


def remove_strays(out: Path, uid: str) -> None:
    """What a stopped run left in OUT/cells: temporary cell directories (``.<id>.tmp-*``, ``.<id>.old-*``) that
    carry this sweep's record, and cell locks no process holds (``.<id>.geoprobe.lock``: a kill before the
    lock's removal; the cell, once finished, is not run again to remove it)."""
    for entry in _listdir(out / CELLS):
        p = out / CELLS / entry
        if entry.startswith(".") and (".tmp-" in entry or ".old-" in entry):
            mark = read_cell_mark(p) if p.is_dir() and not p.is_symlink() else None
            if mark is not None and mark.get("sweep") == uid:
                shutil.rmtree(p, ignore_errors=True)
        elif entry.startswith(".") and entry.endswith(LOCK_SUFFIX) and p.is_file() and not p.is_symlink():
            cell = out / CELLS / entry[1 : -len(LOCK_SUFFIX)]
            try:  # a lock no process holds is taken and released, which removes its file; a held one stays
                OutputLock(cell).acquire().release()
            except GeoprobeError:
                pass
