"""``OUT/sweep.parquet``: one tidy table for the whole sweep, one row per cell × layer × metric
(estimate, CI low/high, null value, n) with the cell's coordinates (model, parameters, revision and its
training step, prompt set, seed, and every other coordinate), readable by pandas, polars and DuckDB.

A result that knows its rows says so (``rows()``: scan's per-layer metrics); for any other experiment
every estimate in its results file (a value with a confidence interval) is a row, named by its path."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator

from geoprobe.kinds import TABLE_KIND
from geoprobe.sweep.manifest import SweepManifest
from geoprobe.sweep.series import ROW_COLUMNS

TABLE = "sweep.parquet"
#: what a row that does not say holds there
ROW_DEFAULTS = {"contrast": ""}
#: the table's columns before the coordinates a sweep adds (series, run, tokens, weights_sha256 and
#: duplicate_of: geoprobe.sweep.series)
COLUMNS = (
    "cell",
    "experiment",
    "model",
    "series",
    "run",
    "n_params",
    "revision",
    "training_step",
    "tokens",
    "weights_sha256",
    "duplicate_of",
    "prompt_set",
    "seed",
    *ROW_COLUMNS,
)


def _float(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def estimates(d: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every estimate (a mapping with value, low, high, confidence) in a results dict, with its path."""
    if isinstance(d, dict):
        if {"value", "low", "high", "confidence"} <= set(d):
            yield path, d
            return
        for k, v in d.items():
            if k not in ("provenance", "config", "timings"):
                yield from estimates(v, f"{path}.{k}" if path else str(k))
    elif isinstance(d, (list, tuple)):
        for i, v in enumerate(d):
            yield from estimates(v, f"{path}[{i}]")


def result_rows(result: Any) -> list[dict[str, Any]]:
    """The result's own rows (``rows()``), else one per estimate in its results file (layer None)."""
    if hasattr(result, "rows"):
        return list(result.rows())
    out = []
    for path, e in estimates(result.to_dict()):
        out.append(
            dict(
                layer=None,
                metric=path,
                estimate=_float(e["value"]),
                low=_float(e["low"]),
                high=_float(e["high"]),
                null=None,
                n=None,
            )
        )
    return out


def table_rows(manifest: SweepManifest, directory: Path) -> list[dict[str, Any]]:
    """Every row of every finished cell, with its coordinates (cells in the manifest's order, every
    coordinate a column in canonical order, None where a cell has none). Only cells the driver verified
    (``done``: its record names this sweep and these coordinates, its results match their run record and
    were made from these coordinates) are read, each from its own directory ``cells/<id>/`` inside
    ``directory``; the manifest's ``result`` paths are never followed."""
    from geoprobe.recipes import experiments, load_result
    from geoprobe.sweep.directory import cell_dir
    from geoprobe.sweep.series import Trajectories, cell_facts, duplicates, runs

    result_file = experiments()[manifest.experiment].result.FILE
    keys = [k for k in manifest.keys() if k not in COLUMNS]
    cells, trajectories = [], Trajectories()
    for c in manifest.cells:
        if c.status != "done":
            continue
        result = load_result(cell_dir(directory, c.id) / result_file)
        coords = c.coordinates
        prompt_set = coords.get("prompts") or _prompt_set(result)
        prov = getattr(result, "provenance", None)
        prov = prov.to_dict() if hasattr(prov, "to_dict") else dict(prov or {})
        facts = cell_facts(coords, prov, c.training_step, trajectories)
        head = {
            "cell": c.id,
            "experiment": manifest.experiment,
            "model": str(coords.get("model", c.provenance.get("model_id", ""))),
            "series": facts["series"],
            "run": facts["run"],
            "n_params": c.n_params,
            "revision": None if coords.get("revision") is None else str(coords["revision"]),
            "training_step": c.training_step,
            "tokens": facts["tokens"],
            "weights_sha256": facts["weights_sha256"],
            "duplicate_of": None,
            "prompt_set": None if prompt_set is None else str(prompt_set),
            "seed": coords.get("seed", c.provenance.get("seed")),
        }
        extra = {k: _cell_value(coords.get(k)) for k in keys}
        cells.append((head, facts, result_rows(result), extra))
    runs([facts for _, facts, _, _ in cells])  # two trajectories of one seed in one series: two runs
    for head, facts, _, _ in cells:
        head["run"] = facts["run"]
    repeated = duplicates([{**head, **extra} for head, _, _, extra in cells])
    rows = []
    for head, _, own, extra in cells:
        head["duplicate_of"] = repeated.get(head["cell"])
        rows += [{**head, **{k: r.get(k, ROW_DEFAULTS.get(k)) for k in ROW_COLUMNS}, **extra} for r in own]
    return rows


def _cell_value(v: Any) -> Any:
    """A coordinate as a table cell: a list setting as its values joined by commas (one type per column)."""
    return ",".join(map(str, v)) if isinstance(v, (tuple, list)) else v


def _prompt_set(result: Any) -> str | None:
    ps = getattr(result, "prompt_set", None)
    if isinstance(ps, dict):
        return ps.get("name")
    config = getattr(result, "config", None)
    return getattr(config, "prompts", None)


def write_table(manifest: SweepManifest, directory: Path, rows: list[dict[str, Any]] | None = None) -> Path | None:
    """Write ``directory/sweep.parquet`` (needs pyarrow, part of the ``ray`` extra); None without it. ``rows``:
    the table's rows when already made (:func:`table_rows`, with any paired-contrast rows added)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    rows = table_rows(manifest, directory) if rows is None else rows
    columns = list(COLUMNS) + [k for r in rows[:1] for k in r if k not in COLUMNS]
    table = pa.Table.from_pylist(rows) if rows else pa.table({c: pa.array([], pa.null()) for c in columns})
    table = table.replace_schema_metadata(
        {"kind": TABLE_KIND, "sweep": manifest.uid, "experiment": manifest.experiment}
    )
    tmp = directory / f".{TABLE}.tmp"
    pq.write_table(table, tmp)
    tmp.replace(directory / TABLE)
    return directory / TABLE
