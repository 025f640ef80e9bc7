"""A sweep file made into its cells, each with canonical coordinates and an id, checked before any work.

**Canonical coordinates.** A coordinate's value is checked against the type of the setting it sets (a
loading setting of LoadOptions, or a field of the experiment's config) and put in one form: a list
setting given one value holds that value alone (``layers = [0, -1]`` in a grid is two cells, ``layers``
``(0,)`` and ``(-1,)``), a list stays a list; anything else that does not fit is one line naming where the
file sets it. The keys are put in one order (the loading settings in LoadOptions' order, then the
config's fields in its order), so the same coordinates written in another order are the same cell with
the same id.

**Cells.** The grid's product (the first key slowest), then each ``[[cell]]``: the first explicit cell
whose values of the grid's keys equal a grid cell's replaces that cell (it may add settings such as
``dtype``); any other is added. Two cells with equal coordinates are refused in one line, never merged or
dropped. Explicit cells are matched through an index of the grid cells (5,000 ``[[cell]]`` tables over a
15,000-cell grid expand in well under a second: benchmarks/bench_sweep_driver.py).

**Checks.** Each cell's config is built (the recipe's tables with the cell's settings) and each cell's
loading settings checked, so a bad value fails here, in one line, before anything is written. A
``revision`` written as a path must be a directory here (it is loaded as the model).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from geoprobe.errors import GeoprobeError, ProbeError, SweepError
from geoprobe.sweep.spec import SweepSpec

_SLUG = re.compile(r"[^A-Za-z0-9.+-]+")
#: columns of sweep.parquet derived from each cell that ``[sweep] replicates`` may name besides its coordinates:
#: ``run``, the cell's training run (geoprobe.sweep.series: a twin's weight seed, a trajectory's seed, …)
DERIVED = ("run",)
_STEP = re.compile(r"(?:^|[/_-])step[-_]?(\d+)$")


def canonical_json(value: Any) -> str:
    """One text per value (tuples and lists alike, keys sorted): what ids and digests hash."""
    return json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))


def _slug(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "+".join(_slug(v) for v in value) or "none"
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, (int, float)):
        text = repr(value)
        return ("m" + text[1:] if text.startswith("-") else text).replace("+", "")  # -1 -> m1, never "1"
    text = str(value)
    if "/" in text or "\\" in text:
        text = "-".join(Path(text).parts[-2:])
    return _SLUG.sub("-", text).strip("-.")[:40] or "x"


def cell_id(coordinates: Mapping[str, Any]) -> str:
    """``<values joined by _>-<8 hex of sha256 over every coordinate>``: each value path-safe and at most
    40 characters (a negative number ``m1``, a list joined by ``+``, a local directory named by its last
    two parts); the hash is over the coordinates' canonical JSON, so it does not depend on key order."""
    parts = "_".join(_slug(v) for v in coordinates.values())[:120]
    digest = hashlib.sha256(canonical_json(dict(coordinates)).encode()).hexdigest()[:8]
    return f"{parts}-{digest}"


def training_step(revision: Any) -> int | None:
    """The step a Pythia-style revision or checkpoint directory names (``step512`` -> 512)."""
    if not isinstance(revision, str):
        return None
    m = _STEP.search(revision.rstrip("/"))
    return int(m.group(1)) if m else None


def is_path(revision: Any) -> bool:
    """Whether a ``revision`` is written as a path (a checkpoint directory), not a Hub revision name."""
    return isinstance(revision, str) and (
        "/" in revision or "\\" in revision or revision.startswith((".", "~")) or Path(revision).expanduser().is_dir()
    )


@dataclass(frozen=True)
class Cell:
    """One run of the sweep: its canonical ``coordinates`` and its ``id``."""

    coordinates: Mapping[str, Any]
    id: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "coordinates", dict(self.coordinates))
        object.__setattr__(self, "id", cell_id(self.coordinates))

    @property
    def training_step(self) -> int | None:
        """The training step its ``revision`` names (``step512``, ``…/step512``), None otherwise."""
        return training_step(self.coordinates.get("revision"))

    def as_json(self) -> dict[str, Any]:
        """The coordinates as JSON holds them (tuples as lists)."""
        return json.loads(canonical_json(self.coordinates))


@dataclass(frozen=True)
class Plan:
    """A sweep file's cells, checked: the experiment, the cells (file order), their keys in canonical
    order, the ``replicates`` the page pools over, and the digest of what the sweep computes."""

    spec: SweepSpec
    cells: tuple[Cell, ...]
    keys: tuple[str, ...]
    digest: str

    @property
    def experiment(self) -> str:
        return self.spec.experiment

    def cell_digest(self, cell: Cell) -> str:
        """sha256 of what one cell computes: the experiment, its tables and the cell's coordinates."""
        body = {"experiment": self.spec.experiment, "tables": self.spec.tables, "coordinates": cell.coordinates}
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()


class _Coercer:
    """Checks and puts in canonical form the value of one coordinate (see the module docs)."""

    def __init__(self, spec: SweepSpec, exp: Any) -> None:
        from typing import get_type_hints

        from geoprobe.models.options import LoadOptions, load_fields

        self.spec, self.exp = spec, exp
        self.load_names = [f.name for f in load_fields()]
        self.config_names = [f.name for f in dataclasses.fields(exp.config)]
        self.order = {k: i for i, k in enumerate([*self.load_names, *self.config_names])}
        self.hints = {**get_type_hints(exp.config), **get_type_hints(LoadOptions)}
        self.limits = getattr(exp.config, "LIMITS", {})

    def key(self, key: str) -> None:
        """A coordinate must be a loading setting the experiment honours, or a setting of its config."""
        spec, exp = self.spec, self.exp
        if key in self.load_names and key not in exp.loads:
            raise SweepError(
                f"sweep {spec.path!r}: {key} is a loading setting that {spec.experiment} does not use; drop it"
            )
        if key not in self.load_names and key not in self.config_names:
            known = ", ".join(sorted(set(exp.loads) | set(self.config_names)))
            raise SweepError(f"sweep {spec.path!r}: {key} is not a setting of {spec.experiment} (known: {known})")

    def value(self, key: str, value: Any, where: str) -> Any:
        from geoprobe.checks import check_limits, conforms, describe

        hint = self.hints.get(key)
        if isinstance(value, list):
            value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
        if hint is not None and not conforms(value, hint):
            if not isinstance(value, tuple) and conforms((value,), hint):
                value = (value,)  # a list setting given one value: that value alone
            else:
                raise SweepError(f"sweep {self.spec.path!r}: {where} = {value!r} is not {describe(hint)}")
        if key in self.limits:
            try:
                check_limits({key: value}, {key: self.limits[key]}, lambda f: where)
            except GeoprobeError as exc:
                raise SweepError(f"sweep {self.spec.path!r}: {exc}") from None
        return value

    def ordered(self, coordinates: Mapping[str, Any]) -> dict[str, Any]:
        return {k: coordinates[k] for k in sorted(coordinates, key=self.order.__getitem__)}


def _matches(values: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, ...]:
    return tuple(canonical_json(values.get(k)) for k in keys)


def make_plan(spec: SweepSpec, *, here: bool = True) -> Plan:
    """The sweep's cells (module docs), every coordinate and every cell's settings checked. ``here``: the
    cells run on this machine (the local executor), so a device must exist here too; on a cluster (False)
    a CUDA device is the cluster's to offer (geoprobe.sweep.executors checks that some node has a GPU)."""
    from geoprobe.recipes import experiment_named, experiments

    exp = experiment_named(spec.experiment)  # only the experiments it must import (geoprobe sweep status)
    if exp is None:
        known = experiments()
        raise SweepError(f"sweep {spec.path!r} runs experiment {spec.experiment!r}; known: {', '.join(known)}")
    try:
        base = exp.config.from_tables(dict(spec.tables), Path(spec.path))
    except ProbeError as exc:  # names the file and the key: the sweep file, as the sweep's own errors do
        raise SweepError(str(exc).replace("probe ", "sweep ", 1)) from None
    co = _Coercer(spec, exp)
    for key in spec.keys():
        co.key(key)
    load = {k: co.value(k, v, f"load.{k}") for k, v in spec.load.items()}
    grid = {k: [co.value(k, v, f"grid.{k}") for v in vs] for k, vs in spec.grid.items()}
    keys = list(grid)
    slots: list[Cell] = []
    pos: dict[str, int] = {}  # cell id -> its slot
    where: dict[str, str] = {}
    index: dict[tuple[str, ...], int] = {}  # the grid keys' values -> the grid cell's slot
    for values in itertools.product(*(grid[k] for k in keys)) if keys else ():
        c = Cell(co.ordered({**load, **dict(zip(keys, values))}))
        index[_matches(c.coordinates, keys)] = pos[c.id] = len(slots)
        slots.append(c)
        where[c.id] = "the grid"
    taken: set[int] = set()  # grid slots an explicit cell has replaced (or repeated)
    for i, raw in enumerate(spec.explicit):
        extra = {k: co.value(k, v, f"[[cell]] #{i + 1} {k}") for k, v in raw.items()}
        c = Cell(co.ordered({**load, **extra}))
        slot = index.get(_matches(extra, keys)) if keys and all(k in extra for k in keys) else None
        if c.id in pos and not (slot is not None and slot == pos[c.id] and slot not in taken):
            raise SweepError(
                f"sweep {spec.path!r}: [[cell]] #{i + 1} has the same coordinates as a cell of {where[c.id]} "
                f"({_shown(c.coordinates)}); list each cell once"
            )
        if slot is not None and slot not in taken:  # replaces the grid cell, in its place
            taken.add(slot)
            del pos[slots[slot].id]
            slots[slot], pos[c.id] = c, slot
        else:
            pos[c.id] = len(slots)
            slots.append(c)
        where[c.id] = f"[[cell]] #{i + 1}"
    cells = {c.id: c for c in slots}
    _check_cells(spec, exp, base, co, list(cells.values()), here)
    names = sorted({k for c in cells.values() for k in c.coordinates}, key=co.order.__getitem__)
    for r in spec.replicates:
        if r not in names and r not in DERIVED:
            raise SweepError(
                f"sweep {spec.path!r}: sweep.replicates names {r!r}, which is no coordinate of this sweep "
                f"({', '.join([*names, *DERIVED])}); name the coordinate whose cells are replicates (e.g. run, the "
                "training run)"
            )
    body = {"experiment": spec.experiment, "tables": spec.tables, "cells": sorted(cells)}
    digest = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    return Plan(spec, tuple(cells.values()), tuple(names), digest)


def _shown(coordinates: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {v!r}" for k, v in coordinates.items())


def _check_cells(spec: SweepSpec, exp: Any, base: Any, co: _Coercer, cells: list[Cell], here: bool) -> None:
    """Every cell's config builds and its loading settings hold, or one line naming the cell; settings
    shared by many cells are checked once."""
    from geoprobe.models.options import LoadOptions

    seen_config: set[str] = set()
    seen_load: set[str] = set()
    for c in cells:
        load = {k: v for k, v in c.coordinates.items() if k in co.load_names}
        rest = {k: v for k, v in c.coordinates.items() if k not in co.load_names}
        key = canonical_json(rest)
        if key not in seen_config:
            try:
                exp.changed(base, **rest)
            except (GeoprobeError, TypeError, ValueError) as exc:
                raise SweepError(f"sweep {spec.path!r}: the cell {_shown(c.coordinates)}: {exc}") from None
            seen_config.add(key)
        rev = load.get("revision")
        if is_path(rev) and not Path(rev).expanduser().is_dir():
            raise SweepError(
                f"sweep {spec.path!r}: revision {rev!r} is written as a path but is no directory here (a relative path "
                "is read from the working directory); fix the path, or give a Hub revision such as step512"
            )
        key = canonical_json(load)
        if exp.loads and key not in seen_load:
            if is_path(rev):
                load = {**load, "model": str(Path(rev).expanduser()), "revision": None}
            try:
                device = str(load.get("device", "cpu"))
                if not here and device.startswith("cuda"):  # checked against the cluster's nodes instead
                    load = {**load, "device": "cpu"}
                LoadOptions(**load).check()
            except GeoprobeError as exc:
                raise SweepError(f"sweep {spec.path!r}: the cell {_shown(c.coordinates)}: {exc}") from None
            seen_load.add(key)


# ---------------------------------------------------------------------------------- coordinates -> loading
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


def split(coordinates: Mapping[str, Any], load_names: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(loading settings, config settings) of a cell; a ``revision`` that is a local directory is the
    model to load (a checkpoint of a series), the ``model`` coordinate then only names the series."""
    load = {k: v for k, v in coordinates.items() if k in load_names}
    rest = {k: v for k, v in coordinates.items() if k not in load_names}
    rev = load.get("revision")
    if isinstance(rev, str) and Path(rev).expanduser().is_dir():
        load["model"], load["revision"] = str(Path(rev).expanduser()), None
    return load, rest


def expected_weight_seed(coordinates: Mapping[str, Any]) -> int | None:
    """The weight seed a cell's twin is built with (``twin:ALIAS@N`` or ``weight_seed``, else 0); None for a
    cell that loads no twin."""
    from geoprobe.models.options import twin_seed

    name, rev = coordinates.get("model"), coordinates.get("revision")
    if not isinstance(name, str) or not name.startswith("twin:") or (isinstance(rev, str) and Path(rev).is_dir()):
        return None
    return twin_seed(name, coordinates.get("weight_seed"))


def expected_model_id(coordinates: Mapping[str, Any]) -> str | None:
    """The ``model_id`` a cell's provenance records when it loads what its (located) coordinates name, worked
    out as :func:`geoprobe.models.loading.load_model` names it, without loading; None where it cannot tell
    (an experiment that loads no model, a name it does not know)."""
    import os

    from geoprobe.models.registry import ALIASES, DEFAULT_MODEL, find_spec_by_hf_id

    rev = coordinates.get("revision")
    name = coordinates.get("model", DEFAULT_MODEL if "revision" in coordinates else None)
    if isinstance(rev, str) and Path(rev).expanduser().is_dir():
        name = str(Path(rev).expanduser())
    if not isinstance(name, str):
        return None
    if name.startswith("twin:"):
        from geoprobe.models.options import parse_twin

        return parse_twin(name).model_id
    path = Path(os.path.expanduser(name))
    if name.lower().endswith(".gguf") or path.is_dir():
        return str(path)
    spec = ALIASES.get(name.lower()) or (find_spec_by_hf_id(name) if "/" in name else None)
    if spec is not None:
        return spec.alias if spec.source == "embedded" else spec.hf_id
    return name if "/" in name else None
