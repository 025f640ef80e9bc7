"""A sweep file: one experiment's recipe plus a grid of coordinates, read into cells.

```toml
[sweep]
experiment = "scan"                 # any experiment (geoprobe.recipes.EXPERIMENTS)
out = "runs/pythia-trajectory"      # optional; --out overrides it
[grid]                              # the product of these lists, the first key slowest
model = ["pythia-160m", "pythia-410m"]
revision = ["step0", "step512"]     # Hub revisions, or local checkpoint directories
seed = [0, 1]
[[cell]]                            # explicit cells: one with the grid's coordinates replaces that cell,
model = "pythia-1b"                 # any other is added
revision = "step143000"
seed = 0
[load]                              # optional: loading settings of every cell (a coordinate overrides them)
dtype = "bfloat16"
[prompts]                           # then the experiment's own tables, exactly as in its recipe
set = "mixed"
```

A coordinate is a loading setting (``model``, ``revision``, ``dtype``, … of LoadOptions) or a setting of
the experiment's config (``seed``, ``n_resamples``, …); each cell is the recipe with its coordinates set.
The ``[load]`` table's settings are coordinates of every cell (first, so a grid or cell value wins).
A cell's id is derived from its coordinates alone (readable, path-safe, with a hash of all of them), so
the same cell has the same directory in every run of the sweep.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from geoprobe.errors import SweepError
from geoprobe.paths import read_regular

#: the most cells one sweep may hold (a grid of 1,232 Pythia checkpoints × a few seeds fits)
MAX_CELLS = 20_000
#: the most values one grid key may list
MAX_VALUES = 5_000
_SLUG = re.compile(r"[^A-Za-z0-9.+-]+")
_STEP = re.compile(r"(?:^|[/_-])step[-_]?(\d+)$")
_SCALAR = (str, int, float, bool)


@dataclass(frozen=True)
class Cell:
    """One run of the sweep: its ``coordinates`` (in the sweep file's key order) and its ``id``."""

    coordinates: Mapping[str, Any]
    id: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "coordinates", dict(self.coordinates))
        object.__setattr__(self, "id", cell_id(self.coordinates))

    @property
    def training_step(self) -> int | None:
        """The training step its ``revision`` names (``step512``, ``…/step512``), None otherwise."""
        return training_step(self.coordinates.get("revision"))


@dataclass(frozen=True)
class SweepSpec:
    """A sweep file as read: the experiment's command, the output directory it names (None: none), the
    grid (key -> values, file order), the explicit cells, the experiment's own recipe tables, and the
    file it came from."""

    experiment: str
    out: str | None
    grid: Mapping[str, tuple[Any, ...]]
    explicit: tuple[Mapping[str, Any], ...]
    tables: Mapping[str, Any]
    path: str
    load: Mapping[str, Any] = field(default_factory=dict)

    def cells(self) -> list[Cell]:
        """The grid's product (the first key slowest), then each explicit cell: replacing the grid cell
        with the same values of the grid's keys, or added after the others. The ``[load]`` settings are
        every cell's first coordinates."""
        keys, base = list(self.grid), dict(self.load)
        out: dict[str, Cell] = {}
        if keys:
            for values in itertools.product(*(self.grid[k] for k in keys)):
                c = Cell({**base, **dict(zip(keys, values))})
                out[c.id] = c
        for extra in self.explicit:
            match = [i for i, c in out.items() if keys and all(c.coordinates.get(k) == extra.get(k) for k in keys)]
            c = Cell({**base, **{k: extra[k] for k in keys if k in extra}, **extra})
            if match:
                out = {(c.id if i == match[0] else i): (c if i == match[0] else v) for i, v in out.items()}
            else:
                out[c.id] = c
        return list(out.values())

    def keys(self) -> list[str]:
        """Every coordinate name: the [load] table's, then the grid's, then the explicit cells'."""
        names = list(self.load) + [k for k in self.grid if k not in self.load]
        for extra in self.explicit:
            names += [k for k in extra if k not in names]
        return names

    def digest(self) -> str:
        """sha256 of what the sweep computes (experiment, tables, cells), not of where it writes."""
        body = {"experiment": self.experiment, "tables": self.tables, "cells": [c.coordinates for c in self.cells()]}
        return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def cell_id(coordinates: Mapping[str, Any]) -> str:
    """``<values joined by _>-<8 hex of sha256 over every coordinate>``; each value path-safe and at
    most 40 characters, a local directory named by its last two parts."""
    parts = []
    for v in coordinates.values():
        text = str(v)
        if isinstance(v, str) and ("/" in v or "\\" in v):
            text = "-".join(Path(v).parts[-2:])
        parts.append(_SLUG.sub("-", text).strip("-.")[:40] or "x")
    digest = hashlib.sha256(json.dumps(dict(coordinates), sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"{'_'.join(parts)[:120]}-{digest}"


def training_step(revision: Any) -> int | None:
    """The step a Pythia-style revision or checkpoint directory names (``step512`` -> 512)."""
    if not isinstance(revision, str):
        return None
    m = _STEP.search(revision.rstrip("/"))
    return int(m.group(1)) if m else None


def _values(key: str, raw: Any, p: Path) -> tuple[Any, ...]:
    if not isinstance(raw, list) or not raw:
        raise SweepError(f"sweep {str(p)!r}: grid.{key} must be a non-empty list, got {raw!r}; write {key} = [...]")
    if len(raw) > MAX_VALUES:
        raise SweepError(
            f"sweep {str(p)!r}: grid.{key} lists {len(raw)} values, above the limit of {MAX_VALUES}; split the sweep"
        )
    for v in raw:
        if not isinstance(v, _SCALAR):
            raise SweepError(
                f"sweep {str(p)!r}: grid.{key} holds {v!r}; each value must be a string, number or boolean"
            )
    if len({json.dumps(v) for v in raw}) != len(raw):
        raise SweepError(f"sweep {str(p)!r}: grid.{key} lists a value twice; list each once")
    return tuple(raw)


def read_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file (its experiment tables are checked by :func:`check_coordinates`' caller,
    which knows the experiment). Every problem is a one-line SweepError naming the file and the key."""
    p = Path(path)
    if not p.is_file():
        raise SweepError(
            f"sweep file {str(p)!r} does not exist or is not a file; pass a sweep file (docs/sweep.md shows one)"
        )
    try:
        doc = tomllib.loads(read_regular(p, lambda why: SweepError(f"sweep file {str(p)!r} {why}")).decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SweepError(f"sweep file {str(p)!r} is not valid UTF-8 TOML: {exc}") from None
    head = doc.pop("sweep", None)
    if not isinstance(head, dict) or not isinstance(head.get("experiment"), str):
        raise SweepError(
            f'sweep {str(p)!r} has no [sweep] table naming its experiment; add [sweep] with experiment = "scan"'
        )
    unknown = sorted(set(head) - {"experiment", "out"})
    if unknown:
        raise SweepError(f"sweep {str(p)!r}: unknown key sweep.{unknown[0]}; known: experiment, out")
    if "out" in head and not isinstance(head["out"], str):
        raise SweepError(f"sweep {str(p)!r}: sweep.out must be a path string")
    grid_raw = doc.pop("grid", {})
    if not isinstance(grid_raw, dict):
        raise SweepError(f"sweep {str(p)!r}: [grid] must be a table of lists")
    grid = {k: _values(k, v, p) for k, v in grid_raw.items()}
    cells = doc.pop("cell", [])
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise SweepError(f"sweep {str(p)!r}: cells are [[cell]] tables of coordinates")
    for i, c in enumerate(cells):
        bad = [k for k, v in c.items() if not isinstance(v, _SCALAR)]
        if not c or bad:
            raise SweepError(
                f"sweep {str(p)!r}: [[cell]] #{i + 1} "
                + (f"key {bad[0]} must be a string, number or boolean" if bad else "is empty; give its coordinates")
            )
    load = doc.pop("load", {})
    bad_load = [k for k, v in load.items() if not isinstance(v, _SCALAR)] if isinstance(load, dict) else [""]
    if bad_load:
        raise SweepError(f"sweep {str(p)!r}: [load] must be a table of strings, numbers or booleans (model, dtype, …)")
    spec = SweepSpec(head["experiment"], head.get("out"), grid, tuple(cells), doc, str(p), load)
    n = 1
    for v in grid.values():
        n *= len(v)
    if n + len(cells) > MAX_CELLS:
        raise SweepError(
            f"sweep {str(p)!r} has {n + len(cells)} cells, above the limit of {MAX_CELLS}; split it into several sweeps"
        )
    if not grid and not cells:
        raise SweepError(f"sweep {str(p)!r} has no [grid] and no [[cell]]: nothing to run; add [grid] with lists")
    return spec


def check_coordinates(spec: SweepSpec, load_keys: set[str], config_keys: set[str], honoured: set[str]) -> None:
    """Every coordinate must be a loading setting the experiment honours (``honoured`` ⊆ ``load_keys``) or a
    setting of its config; one line naming the first that is not."""
    for key in spec.keys():
        if key in load_keys and key not in honoured:
            raise SweepError(
                f"sweep {spec.path!r}: {key} is a loading setting that {spec.experiment} does not use; drop it"
            )
        if key not in load_keys and key not in config_keys:
            known = ", ".join(sorted((honoured | config_keys)))
            raise SweepError(f"sweep {spec.path!r}: {key} is not a setting of {spec.experiment} (known: {known})")
