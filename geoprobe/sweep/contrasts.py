"""Paired contrasts across the checkpoints of a sweep's series (issue 37; docs/sweep.md "Paired contrasts,
emergence and tracking").

A **series** is the cells of a scan sweep that differ only in their checkpoint (revision, step): cells are
grouped by every column of their sweep.parquet row but the checkpoint's own (geoprobe.sweep.series), and a
series' training runs (``run``) are its replicates. A series is compared only on **one shared prompt set**:
every cell's results.json must carry the same ``prompt_set.hash``; otherwise the series is refused in one
line naming two hashes and the fix.

For each checkpoint of a run, each per-layer metric's change (geoprobe.sweep.checkpoints) is estimated
against the run's **baseline** (``"step0"``: its step-0 checkpoint; ``"baseline:<cell>"``: a cell named
as baseline, or the earliest checkpoint where there is no step 0) and against the **previous** checkpoint,
by a **paired bootstrap over the shared prompts**: the same B resamples of prompt indices for every cell,
the contrast's draws the differences of the two cells' draws (key orthogonality, a property of the
weights: the exact difference, resampled over heads paired by head index). Every contrast row gives the
percentile interval at the nominal level (``low``/``high``), and, over its **family** — one run's
checkpoints × per-layer metrics, for one kind of contrast — the simultaneous max-|t| interval
(``low_adj``/``high_adj``) and Holm-adjusted bootstrap p-values (``p_adj``): geoprobe.analysis.paired.

From Python::

    from geoprobe.sweep.contrasts import series_contrasts
    table = series_contrasts("runs/trajectory-sweep", n_resamples=1000)
    table.contrasts("step0", metric="alignment_spearman")   # PairedRow records
    table.emergence                                         # geoprobe.sweep.emergence.EmergenceRow records
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from geoprobe.analysis.paired import (
    bootstrap_p,
    hierarchical_indices,
    holm,
    max_t_interval,
    percentile_interval,
    resample_indices,
)
from geoprobe.serial import Record
from geoprobe.sweep.checkpoints import (
    CheckpointArrays,
    CheckpointStats,
    checkpoint_statistics,
    finite,
    pca_draws,
)
from geoprobe.sweep.emergence import EmergenceRow, series_emergence

#: own rows the contrasts add to sweep.parquet (the scan's own metrics are already there)
TRACKING = ("cka_to_final", "pc1_angle_to_final", "subspace_angle_to_final", "routing_stability")
SHARED_PROMPTS_FIX = (
    "a paired contrast needs one prompt set shared by all cells: draw it once (geoprobe sample --model FINAL "
    '--out prompts.jsonl) and give the sweep [prompts] file = "prompts.jsonl"'
)


@dataclass(frozen=True, eq=False)
class PairedRow(Record):
    """One row of a series: a checkpoint's own estimate (``contrast`` "") of a tracking or per-head metric,
    or its contrast (``"step0"``, ``"baseline:<cell>"``, ``"previous"``) against ``against`` (a cell id):
    estimate, nominal percentile interval, simultaneous interval over the family (``low_adj``/``high_adj``),
    bootstrap p-value and its Holm adjustment, over ``n`` prompts (or heads)."""

    series: str
    run: str | None
    cell: str
    step: int | None
    metric: str
    layer: int | None
    head: int | None
    contrast: str
    against: str | None
    estimate: float | None
    low: float | None
    high: float | None
    low_adj: float | None = None
    high_adj: float | None = None
    p: float | None = None
    p_adj: float | None = None
    n: int | None = None


@dataclass(frozen=True, eq=False)
class ContrastTable(Record):
    """Every series' rows and emergence, the series refused (one line each) and the settings used."""

    rows: tuple[PairedRow, ...]
    emergence: tuple[EmergenceRow, ...]
    refused: tuple[str, ...]
    n_resamples: int
    pca_resamples: int
    confidence: float
    seed: int

    def contrasts(self, kind: str, **match: Any) -> list[PairedRow]:
        """The rows of one kind of contrast (``"step0"``, ``"previous"``, ``"baseline:<cell>"``, or ``"baseline"``
        for either baseline kind), with fields equal to ``match`` (``metric="pc1"``, ``layer=1``, …)."""

        def kind_ok(r: PairedRow) -> bool:
            return r.contrast == kind or (kind == "baseline" and r.contrast.startswith(("step0", "baseline:")))

        return [r for r in self.rows if kind_ok(r) and all(getattr(r, k) == v for k, v in match.items())]

    def parquet_rows(self, heads: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The rows as sweep.parquet rows: each with its cell's columns (``heads``: cell -> a row of that cell),
        ``null`` 0 for a contrast (no change), None for an own row."""
        out = []
        for r in self.rows:
            own = {
                "layer": r.layer,
                "metric": r.metric,
                "estimate": r.estimate,
                "low": r.low,
                "high": r.high,
                "null": None if r.contrast == "" else 0.0,
                "n": r.n,
                "head": r.head,
                "contrast": r.contrast,
                "low_adj": r.low_adj,
                "high_adj": r.high_adj,
                "p_adj": r.p_adj,
            }
            out.append({**heads[r.cell], **own})
        return out


@dataclass(frozen=True)
class SeriesCells:
    """One series of a sweep: its label and its cells' table heads (one row per cell), run then step order."""

    label: str
    heads: tuple[Mapping[str, Any], ...]


def find_series(rows: Sequence[Mapping[str, Any]], include_duplicates: bool = False) -> list[SeriesCells]:
    """The series of a sweep's own rows (contrast "" and no head): cells grouped by every column but the
    checkpoint's, the row's and ``run``; a cell whose weights repeat an earlier checkpoint (``duplicate_of``)
    is left out unless ``include_duplicates``; cells without a training step are no checkpoints."""
    from geoprobe.sweep.series import series_cells, series_key
    from geoprobe.sweep.table import ROW_COLUMNS

    heads: dict[str, dict[str, Any]] = {}
    for r in series_cells(list(rows), include_duplicates):
        if r.get("contrast", "") == "" and r.get("head") is None and r["cell"] not in heads:
            heads[r["cell"]] = {k: v for k, v in r.items() if k not in ROW_COLUMNS}
    groups: dict[str, list[dict[str, Any]]] = {}
    for h in heads.values():
        if h.get("training_step") is not None:
            groups.setdefault(series_key({k: v for k, v in h.items() if k != "run"}), []).append(h)
    keys = [json.loads(k) for k in groups]
    vary = [k for k in dict.fromkeys(x for d in keys for x in d) if len({json.dumps(d.get(k)) for d in keys}) > 1]
    out = []
    for key, group in zip(keys, groups.values()):
        name = str(group[0].get("series") or group[0].get("model"))
        extra = ", ".join(f"{k}={key.get(k)}" for k in vary if k not in ("series", "model", "experiment"))
        label = f"{name} ({extra})" if extra else name
        group.sort(key=lambda h: (str(h.get("run")), h["training_step"]))
        out.append(SeriesCells(label, tuple(group)))
    return out


def series_indices(
    label: str, n: int, runs: int, heads: int, n_resamples: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The resamples one series is analysed with: training runs (B, runs), shared prompts (B, n) and heads
    (B, heads; None without heads), seeded by ``seed`` and the series' label (so a series' numbers do not
    depend on which other series the sweep holds)."""
    key = [int(seed), zlib.crc32(label.encode())]
    run_idx, idx = hierarchical_indices(runs, n, n_resamples, key)
    head_idx = resample_indices(heads, n_resamples, [*key, 1]) if heads else None
    return run_idx, idx, head_idx


def _refusal(label: str, arrays: Sequence[CheckpointArrays]) -> str | None:
    first = arrays[0]
    for a in arrays[1:]:
        if a.prompt_hash != first.prompt_hash or a.prompt_hash is None:
            h1, h2 = (str(x.prompt_hash)[:12] for x in (first, a))
            return (
                f"series {label}: not compared: cell {first.cell} was scanned on prompt set {h1} and cell {a.cell} on "
                f"{h2}; {SHARED_PROMPTS_FIX}"
            )
        if a.layers != first.layers or a.n != first.n:
            return (
                f"series {label}: not compared: cell {first.cell} holds layers {list(first.layers)} of {first.n} "
                f"prompts and cell {a.cell} layers {list(a.layers)} of {a.n}; scan every checkpoint with the same "
                "layers"
            )
    return None


#: reads one checkpoint's arrays (``light``: results.json only, no capture: what the refusal checks)
Loader = Callable[[bool], CheckpointArrays]


def _get(c: CheckpointArrays | Loader, light: bool = False) -> CheckpointArrays:
    return c if isinstance(c, CheckpointArrays) else c(light)


def paired_series(
    label: str,
    checkpoints: Sequence[CheckpointArrays | Loader],
    *,
    n_resamples: int = 1000,
    pca_resamples: int = 200,
    confidence: float = 0.95,
    baseline: str | None = None,
    k: int = 3,
    seed: int = 0,
) -> tuple[list[PairedRow], list[EmergenceRow], str | None]:
    """The rows and emergence of one series from its checkpoints' arrays (or loaders of them: each read
    twice, light for the checks, then whole one at a time, its run's final one kept while the run is read),
    or a one-line refusal. Checkpoints
    are grouped by ``run`` and ordered by step; ``baseline`` names a cell (its id) of the series."""
    metas = [_get(c, light=True) for c in checkpoints]
    why = _refusal(label, metas)
    if why is not None:
        return [], [], why
    runs: dict[str | None, list[int]] = {}
    for i in sorted(
        range(len(metas)), key=lambda i: (str(metas[i].run), metas[i].step if metas[i].step is not None else -1)
    ):
        runs.setdefault(metas[i].run, []).append(i)
    arrays = metas
    n = arrays[0].n
    p = min(pca_resamples, n_resamples)
    heads = max((a.per_head.shape[1] for a in metas if a.per_head is not None), default=0)
    run_idx, idx, head_idx = series_indices(label, n, len(runs), heads, n_resamples, seed)
    stats: dict[str | None, list[CheckpointStats]] = {}
    for run, ids in runs.items():
        final = _get(checkpoints[ids[-1]])
        final_pca = None if final.values is None else [pca_draws(x, idx[:p], k) for x in final.values]
        stats[run] = []
        for i in ids:  # one checkpoint's arrays at a time (and its run's final one)
            a = final if i == ids[-1] else _get(checkpoints[i])
            stats[run].append(
                checkpoint_statistics(
                    a,
                    idx,
                    head_idx,
                    final=final,
                    pca=final_pca if a is final else None,
                    final_pca=final_pca,
                    pca_resamples=p,
                    k=k,
                    confidence=confidence,
                )
            )
    rows = []
    for run, st in stats.items():
        rows += _own_rows(label, st, confidence)
        base = _baseline(st, baseline)
        kind = "step0" if base.step == 0 and baseline is None else f"baseline:{base.cell}"
        rows += _family(label, [(s, base) for s in st if s is not base], kind, confidence)
        rows += _family(label, list(zip(st[1:], st[:-1])), "previous", confidence)
    return rows, series_emergence(label, stats, run_idx, confidence), None


def _baseline(stats: list[CheckpointStats], named: str | None) -> CheckpointStats:
    for s in stats:
        if named is not None and s.cell == named:
            return s
    return next((s for s in stats if s.step == 0), stats[0])


def _own_rows(label: str, stats: list[CheckpointStats], confidence: float) -> list[PairedRow]:
    rows = []
    for s in stats:
        for (metric, layer, head), d in s.draws.items():
            if metric in TRACKING:
                lo, hi = percentile_interval(d.draws, confidence)
                row = (finite(d.estimate), finite(lo), finite(hi))
                rows.append(PairedRow(label, s.run, s.cell, s.step, metric, layer, head, "", None, *row, n=d.n))
        for (metric, layer, head), o in s.own.items():
            row = (finite(o.estimate), finite(o.low), finite(o.high))
            rows.append(PairedRow(label, s.run, s.cell, s.step, metric, layer, head, "", None, *row, n=o.n))
    return rows


def _family(
    label: str, pairs: list[tuple[CheckpointStats, CheckpointStats]], kind: str, confidence: float
) -> list[PairedRow]:
    """Contrasts of every pair (cell, against) over every per-layer metric both have: one family."""
    members = [(s, t, key) for s, t in pairs for key in s.draws if key in t.draws]
    if not members:
        return []
    est = np.array([s.draws[key].estimate - t.draws[key].estimate for s, t, key in members])
    dr = np.stack([s.draws[key].draws - t.draws[key].draws for s, t, key in members])
    lo, hi = percentile_interval(dr, confidence)
    lo_adj, hi_adj, _ = max_t_interval(est, dr, confidence)
    p = bootstrap_p(est, dr)
    p_adj = holm(p)
    rows = []
    for i, (s, t, (metric, layer, head)) in enumerate(members):
        vals = [finite(v[i]) for v in (est, lo, hi, lo_adj, hi_adj, p, p_adj)]
        rows.append(
            PairedRow(
                label, s.run, s.cell, s.step, metric, layer, head, kind, t.cell, *vals, s.draws[(metric, layer, head)].n
            )
        )
    return rows


def series_contrasts(
    out: str | os.PathLike,
    *,
    n_resamples: int = 1000,
    pca_resamples: int = 200,
    confidence: float = 0.95,
    baseline: str | None = None,
    k: int = 3,
    seed: int = 0,
    include_duplicates: bool = False,
    rows: Sequence[Mapping[str, Any]] | None = None,
) -> ContrastTable:
    """Paired contrasts and emergence of every series of the scan sweep in ``out`` (module docs) with at
    least two checkpoints. ``baseline``: a cell id or revision each series' contrasts are taken against where
    it is one of its cells (default: each run's step 0). ``pca_resamples``: resamples of the metrics that
    recompute a PCA or an n × n Gram matrix per resample (PCA_METRICS; the first of the ``n_resamples``).
    ``rows``: the sweep's own table rows, when already read (geoprobe.sweep.table.table_rows)."""
    from geoprobe.errors import SweepError
    from geoprobe.recipes import load_result
    from geoprobe.sweep.directory import cell_dir
    from geoprobe.sweep.manifest import read_manifest
    from geoprobe.sweep.table import table_rows

    if not 0.5 <= confidence < 1 or n_resamples < 10 or not 2 <= pca_resamples or k < 1:
        raise SweepError(
            f"contrast settings n_resamples={n_resamples} (>= 10), pca_resamples={pca_resamples} (>= 2), "
            f"confidence={confidence} (in [0.5, 1)), k={k} (>= 1)"
        )
    directory = Path(out)
    manifest = read_manifest(directory)
    if manifest is None:
        raise SweepError(f"{str(directory)!r} holds no sweep manifest (sweep.json); pass a sweep's directory")
    settings = dict(n_resamples=n_resamples, pca_resamples=pca_resamples, confidence=confidence, seed=seed)
    if manifest.experiment != "scan":
        return ContrastTable(
            (), (), (f"a {manifest.experiment} sweep has no paired contrasts (scan sweeps only)",), **settings
        )
    rows = table_rows(manifest, directory) if rows is None else rows
    out_rows: list[PairedRow] = []
    emergence: list[EmergenceRow] = []
    refused: list[str] = []
    read: dict[str, Any] = {}  # each cell's ScanResult between its light and its whole reading
    for series in find_series(rows, include_duplicates):
        if len(series.heads) < 2:
            continue
        named = _named(series, baseline)

        def loader(h: Mapping[str, Any]) -> Loader:
            def load(light: bool) -> CheckpointArrays:
                d = cell_dir(directory, h["cell"])
                if h["cell"] not in read:  # results.json read once for the light and the whole reading
                    read[h["cell"]] = load_result(d / "results.json")
                result = read.pop(h["cell"]) if not light else read[h["cell"]]
                return CheckpointArrays.from_directory(
                    d, cell=h["cell"], step=h["training_step"], run=h.get("run"), light=light, result=result
                )

            return load

        r, e, why = paired_series(
            series.label,
            [loader(h) for h in series.heads],
            n_resamples=n_resamples,
            pca_resamples=pca_resamples,
            confidence=confidence,
            baseline=named,
            k=k,
            seed=seed,
        )
        out_rows += r
        emergence += e
        refused += [why] if why else []
    return ContrastTable(tuple(out_rows), tuple(emergence), tuple(refused), **settings)


def _named(series: SeriesCells, baseline: str | None) -> str | None:
    """The cell of ``series`` that ``baseline`` names (its id, or its revision), None if none does."""
    for h in series.heads if baseline else ():
        if baseline in (h["cell"], h.get("revision")) or str(h.get("revision") or "").rstrip("/").endswith(
            f"/{baseline}"
        ):
            return str(h["cell"])
    return None


__all__ = [
    "ContrastTable",
    "PairedRow",
    "SeriesCells",
    "find_series",
    "paired_series",
    "series_contrasts",
    "series_indices",
]
