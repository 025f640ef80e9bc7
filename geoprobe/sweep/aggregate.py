"""How the sweep's page combines cells, honestly: only **replicate** coordinates are pooled — those the
sweep file names in ``[sweep] replicates`` (training runs, or analysis seeds if the user says so) —
and every other coordinate that varies is a **series** (its own line, or its own table row).

A pooled point over k ≥ 2 replicate cells is the mean of their estimates with a 95 % t-interval across
them (mean ± t₀.₉₇₅,ₖ₋₁ · s/√k, s their standard deviation): the spread between replicates, which is what a
claim about replicates needs. CI endpoints are never averaged. A point of one cell is that cell's own
estimate and its own confidence interval. Every pooled value says how many cells it pools.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from geoprobe.analysis.stats import t_interval

_STEP_PART = re.compile(r"(?:^|[/_-])step[-_]?\d+/?$")
#: the interval of a pooled point
POOLED = "mean over {k} replicates ({keys}), 95 % t-interval across them"


@dataclass(frozen=True)
class Point:
    """One plotted or tabulated value: its ``series`` label, ``x``, estimate, interval (None: none), the
    number of cells it pools (``k``) and how its interval was computed (``how``)."""

    series: str
    x: Any
    estimate: float
    low: float | None
    high: float | None
    k: int
    how: str


def run_of(revision: object) -> str | None:
    """The training run a revision belongs to: a checkpoint directory's path without its ``stepN`` part
    (two runs' ``step512`` are two series unless ``revision`` is a declared replicate); None for a Hub
    revision name or none."""
    if not isinstance(revision, str) or "/" not in revision:
        return None
    return _STEP_PART.sub("", revision.rstrip("/")) or None


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def varying(cells: Sequence[Mapping[str, Any]], keys: Iterable[str]) -> list[str]:
    """The coordinate keys whose values differ between ``cells`` (a key some cells lack varies too)."""
    return [k for k in keys if len({_key(c.get(k)) for c in cells}) > 1]


def label(coordinates: Mapping[str, Any], keys: Sequence[str]) -> str:
    """A series' name: ``model=pythia-160m, max_tokens=64`` (``all cells`` when nothing varies)."""
    return ", ".join(f"{k}={coordinates.get(k)}" for k in keys) or "all cells"


def pool(
    cells: Sequence[Mapping[str, Any]],
    *,
    x: str,
    keys: Sequence[str],
    series_keys: Sequence[str],
    replicates: Sequence[str],
) -> list[Point]:
    """One :class:`Point` per group of cells whose coordinates (``keys``) are equal but for the
    ``replicates``: ``cells`` are dicts with the coordinates, ``x`` (the x axis's value) and ``value``
    ((estimate, low, high)). A group of one is that cell; a larger group is pooled (module docs). Cells
    that differ in any coordinate that is not a declared replicate are never pooled. Each point is named by
    its series (the values of ``series_keys``)."""
    reps = set(replicates)
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for c in cells:
        groups.setdefault(_key([c.get(k) for k in keys if k not in reps] + [c[x]]), []).append(c)
    out = []
    for group in groups.values():
        name, first = label(group[0], series_keys), group[0]
        if len(group) == 1:
            est, low, high = first["value"]
            out.append(Point(name, first[x], est, low, high, 1, "the cell's own 95 % CI"))
        else:
            e = t_interval([g["value"][0] for g in group])  # geoprobe.analysis.stats: Student-t, k - 1 dof
            how = POOLED.format(k=len(group), keys=", ".join(replicates))
            out.append(Point(name, first[x], e.value, e.low, e.high, len(group), how))
    return sorted(out, key=lambda p: (p.series, _sortable(p.x)))


def _sortable(x: Any) -> tuple[int, Any]:
    return (0, x) if isinstance(x, (int, float)) else (1, str(x))
