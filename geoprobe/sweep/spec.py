"""A sweep file: one experiment's recipe plus a grid of coordinates, read into cells.

```toml
[sweep]
experiment = "scan"                 # any experiment (geoprobe.recipes.EXPERIMENTS)
out = "runs/pythia-trajectory"      # optional; --out overrides it
replicates = ["run"]                # optional: coordinates (or run: the training run) whose cells are
                                    # replicates, pooled on the page
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
The ``[load]`` table's settings are coordinates of every cell (a grid or cell value of the same key wins).
This module reads and checks the file's shape; :mod:`geoprobe.sweep.plan` makes it into cells.
"""

from __future__ import annotations

import json
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
_SCALAR = (str, int, float, bool)


@dataclass(frozen=True)
class SweepSpec:
    """A sweep file as read: the experiment's command, the output directory it names (None: none), the
    grid (key -> values, file order), the explicit cells, the experiment's own recipe tables, the file it
    came from, the ``[load]`` settings and the coordinates whose cells are replicates (``[sweep]
    replicates``: pooled on the sweep's page; every other varying coordinate is drawn as its own series;
    besides coordinates it may name ``run``, each cell's training run: geoprobe.sweep.series)."""

    experiment: str
    out: str | None
    grid: Mapping[str, tuple[Any, ...]]
    explicit: tuple[Mapping[str, Any], ...]
    tables: Mapping[str, Any]
    path: str
    load: Mapping[str, Any] = field(default_factory=dict)
    replicates: tuple[str, ...] = ()

    def keys(self) -> list[str]:
        """Every coordinate name: the [load] table's, then the grid's, then the explicit cells'."""
        names = list(self.load) + [k for k in self.grid if k not in self.load]
        for extra in self.explicit:
            names += [k for k in extra if k not in names]
        return names


def _scalar_or_list(v: Any) -> bool:
    """A coordinate's value: a string, number or boolean, or a list of them (for a list setting)."""
    return isinstance(v, _SCALAR) or (isinstance(v, list) and all(isinstance(x, _SCALAR) for x in v))


def _values(key: str, raw: Any, p: Path) -> tuple[Any, ...]:
    if not isinstance(raw, list) or not raw:
        raise SweepError(f"sweep {str(p)!r}: grid.{key} must be a non-empty list, got {raw!r}; write {key} = [...]")
    if len(raw) > MAX_VALUES:
        raise SweepError(
            f"sweep {str(p)!r}: grid.{key} lists {len(raw)} values, above the limit of {MAX_VALUES}; split the sweep"
        )
    for v in raw:
        if not _scalar_or_list(v):
            raise SweepError(
                f"sweep {str(p)!r}: grid.{key} holds {v!r}; each value must be a string, number or boolean (or, for "
                "a list setting, a list of them)"
            )
    if len({json.dumps(v) for v in raw}) != len(raw):
        raise SweepError(f"sweep {str(p)!r}: grid.{key} lists a value twice; list each once")
    return tuple(raw)


def read_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file's shape (its coordinates and tables are checked against the experiment by
    :func:`geoprobe.sweep.plan.make_plan`). Every problem is a one-line SweepError naming the file and the key."""
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
    unknown = sorted(set(head) - {"experiment", "out", "replicates"})
    if unknown:
        raise SweepError(f"sweep {str(p)!r}: unknown key sweep.{unknown[0]}; known: experiment, out, replicates")
    if "out" in head and (not isinstance(head["out"], str) or not head["out"] or "\0" in head["out"]):
        raise SweepError(
            f"sweep {str(p)!r}: sweep.out = {head['out']!r} is not a usable path (a non-empty string without NUL "
            "bytes); fix it, or drop it and pass --out"
        )
    replicates = head.get("replicates", [])
    if not isinstance(replicates, list) or not all(isinstance(r, str) for r in replicates):
        raise SweepError(
            f'sweep {str(p)!r}: sweep.replicates = {replicates!r} must be a list of coordinate names, e.g. ["seed"]'
        )
    grid_raw = doc.pop("grid", {})
    if not isinstance(grid_raw, dict):
        raise SweepError(f"sweep {str(p)!r}: [grid] must be a table of lists")
    grid = {k: _values(k, v, p) for k, v in grid_raw.items()}
    cells = doc.pop("cell", [])
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise SweepError(f"sweep {str(p)!r}: cells are [[cell]] tables of coordinates")
    for i, c in enumerate(cells):
        bad = [k for k, v in c.items() if not _scalar_or_list(v)]
        if not c or bad:
            raise SweepError(
                f"sweep {str(p)!r}: [[cell]] #{i + 1} "
                + (
                    f"key {bad[0]} must be a string, number or boolean (or a list of them)"
                    if bad
                    else "is empty; give its coordinates"
                )
            )
    load = doc.pop("load", {})
    bad_load = [k for k, v in load.items() if not isinstance(v, _SCALAR)] if isinstance(load, dict) else [""]
    if bad_load:
        raise SweepError(f"sweep {str(p)!r}: [load] must be a table of strings, numbers or booleans (model, dtype, …)")
    spec = SweepSpec(head["experiment"], head.get("out"), grid, tuple(cells), doc, str(p), load, tuple(replicates))
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
