"""When does each metric of a series change, and does the frame form before the precision (arXiv
2512.22473)? ``OUT/emergence.parquet``, one row per series × metric × layer (docs/sweep.md "Paired contrasts,
emergence and tracking").

Along a series' checkpoints t₀ < t₁ < … < t_F (the steps every run of it has; the metric averaged over the
runs when it has several), from the paired bootstrap of geoprobe.sweep.contrasts (runs resampled, then
the shared prompts, when there are several runs):

* ``emergence_step``: the first checkpoint from which the contrast against t₀ stays significant, in the
  direction of the final change, at every later checkpoint (for a metric against the final checkpoint,
  ``TO_FINAL``, which is perfect at t_F by construction: every later checkpoint before t_F). Significant =
  its simultaneous max-|t| interval over the series' family (checkpoints × per-layer metrics) excludes 0.
  No emergence (None) when the final contrast is not significant. Its interval: the same rule applied to
  every bootstrap resample of the contrasts with the interval half-widths held at the data's (a resample
  that never stays significant counts as later than the last checkpoint: an open upper end, None).
* ``t50`` / ``t90``: the first checkpoint at which the progress fraction (m(t) − m(t₀)) / (m(t_F) − m(t₀))
  reaches 0.5 / 0.9, of the estimate and of each resample (intervals: the resamples' quantiles); None where
  the metric shows no significant change from t₀ to t_F.
* **Frame before precision**: rows ``frame_minus_<metric>`` per layer hold emergence step, t50 and t90 of
  the frame (``routing_stability``) minus those of a precision metric (``pc1_angle_to_final``,
  ``cka_to_final``, ``alignment_spearman``), each with the interval of the per-resample differences; the
  ``verdict`` says "frame first" only when an interval lies below 0.

Intervals of steps are quantiles of the resamples' steps (``inverted_cdf``: always a checkpoint's step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.paired import first_reaching, first_sustained, max_t_interval, pool_runs, progress_fraction
from geoprobe.serial import Record
from geoprobe.sweep.checkpoints import CheckpointStats, Key

EMERGENCE = "emergence.parquet"
FRAME = "routing_stability"
#: metrics measured against the series' final checkpoint: perfect there by construction, so their
#: significance rule stops at the checkpoint before the final one (their progress fraction still ends there)
TO_FINAL = ("cka_to_final", "pc1_angle_to_final", "subspace_angle_to_final", "routing_stability")
PRECISION = ("pc1_angle_to_final", "cka_to_final", "alignment_spearman")
#: emergence.parquet's columns, in order
COLUMNS = (
    "series",
    "metric",
    "layer",
    "emergence_step",
    "low",
    "high",
    "t50",
    "t50_low",
    "t50_high",
    "t90",
    "t90_low",
    "t90_high",
    "runs",
    "direction",
    "verdict",
)


@dataclass(frozen=True, eq=False)
class EmergenceRow(Record):
    """One series × metric × layer (module docs): steps with their intervals (None: none, or an open end),
    ``runs`` pooled, ``direction`` of the change from the first to the last checkpoint (+1 up, −1 down, 0 no
    significant change); a ``frame_minus_<metric>`` row holds differences of steps and its ``verdict``."""

    series: str
    metric: str
    layer: int | None
    emergence_step: float | None
    low: float | None
    high: float | None
    t50: float | None
    t50_low: float | None
    t50_high: float | None
    t90: float | None
    t90_low: float | None
    t90_high: float | None
    runs: int
    direction: int = 0
    verdict: str = ""


def step_interval(
    values: Float[np.ndarray, "... B"], confidence: float = 0.95
) -> tuple[Float[np.ndarray, "..."], Float[np.ndarray, "..."]]:
    """Central ``confidence`` quantiles of per-resample steps (``inverted_cdf``; NaN resamples left out, ±inf
    kept: an open end)."""
    tail = (1 - confidence) / 2
    v = np.asarray(values, dtype=np.float64)
    lo, hi = np.full(v.shape[:-1], np.nan), np.full(v.shape[:-1], np.nan)
    for i in np.ndindex(v.shape[:-1]):
        x = v[i][~np.isnan(v[i])]
        if x.size:
            lo[i], hi[i] = np.quantile(x, [tail, 1 - tail], method="inverted_cdf")
    return lo, hi


def _steps(index: np.ndarray, steps: np.ndarray, never: float) -> np.ndarray:
    """Checkpoint indices as steps: −1 becomes ``never``."""
    return np.where(index >= 0, steps[np.clip(index, 0, None)], never)


def _cell(x: float) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def series_emergence(
    label: str,
    stats: dict[Any, list[CheckpointStats]],
    run_idx: np.ndarray,
    confidence: float = 0.95,
) -> list[EmergenceRow]:
    """Emergence of every per-layer metric of one series (module docs) from its runs' checkpoint statistics
    (each run's list in step order, all made on the same resampled prompts) and the resampled runs
    ``run_idx`` (B, R)."""
    runs = list(stats.values())
    common = set.intersection(*({s.step for s in st} for st in runs))
    steps = np.array(sorted(x for x in common if x is not None), dtype=np.float64)
    if steps.size < 2:
        return []
    by_step = [{s.step: s for s in st} for st in runs]
    keys: list[Key] = [key for key in runs[0][0].draws if all(key in r[int(t)].draws for r in by_step for t in steps)]
    if not keys:
        return []
    est = np.array([[[r[int(t)].draws[k].estimate for t in steps] for r in by_step] for k in keys])  # (K, R, T)
    dr = np.array([[[r[int(t)].draws[k].draws for t in steps] for r in by_step] for k in keys])  # (K, R, T, B)
    m = est.mean(axis=1)
    md = pool_runs(np.moveaxis(dr, 1, 0), run_idx) if len(runs) > 1 else dr[:, 0]  # (K, T, B)
    delta, ddr = m[:, 1:] - m[:, :1], md[:, 1:] - md[:, :1]
    b = ddr.shape[-1]
    lo, hi, _ = max_t_interval(delta.ravel(), ddr.reshape(-1, b), confidence)
    lo, hi = lo.reshape(delta.shape), hi.reshape(delta.shape)
    # the last checkpoint each metric's rule reads: t_F, or the one before for a metric against t_F
    last = np.array([delta.shape[1] - (2 if k[0] in TO_FINAL and delta.shape[1] > 1 else 1) for k in keys])
    rk = np.arange(len(keys))
    direction = np.where(lo[rk, last] > 0, 1, np.where(hi[rk, last] < 0, -1, 0))
    half = np.where(
        direction[:, None] > 0, delta - lo, hi - delta
    )  # the simultaneous half-width on the side of the change
    s = direction[:, None]
    later = steps[1:]
    beyond = np.arange(delta.shape[1])[None, :] > last[:, None]  # columns past a metric's last: no constraint
    first = first_sustained((s * delta - half > 0) | beyond)
    emerged = _steps(np.where(first > last, -1, first), later, math.nan)  # past its last: never significant there
    sig = (s[..., None] * ddr - half[..., None] > 0) | beyond[..., None]
    first = first_sustained(np.moveaxis(sig, -1, 1))  # (K, B)
    em_draws = _steps(np.where(first > last[:, None], -1, first), later, math.inf)
    em_draws = np.where(np.isfinite(ddr).all(axis=1), em_draws, math.nan)  # (K, B)
    frac, frac_draws = progress_fraction(m), progress_fraction(np.moveaxis(md, -1, 1))  # (K, T), (K, B, T)
    t = {q: _steps(first_reaching(frac, q), steps, math.nan) for q in (0.5, 0.9)}
    td = {q: _steps(first_reaching(frac_draws, q), steps, math.nan) for q in (0.5, 0.9)}
    changed = direction != 0
    for arr in (emerged, t[0.5], t[0.9]):
        arr[~changed] = math.nan
    for arr in (em_draws, td[0.5], td[0.9]):
        arr[~changed] = math.nan
    rows = []
    ivals = {name: step_interval(a, confidence) for name, a in (("em", em_draws), ("t50", td[0.5]), ("t90", td[0.9]))}
    for i, (metric, layer, _) in enumerate(keys):
        vals = [emerged[i], *(v[i] for v in ivals["em"]), t[0.5][i], *(v[i] for v in ivals["t50"])]
        vals += [t[0.9][i], *(v[i] for v in ivals["t90"])]
        rows.append(EmergenceRow(label, metric, layer, *(_cell(v) for v in vals), len(runs), int(direction[i])))
    rows += _frame_rows(label, keys, (emerged, t[0.5], t[0.9]), (em_draws, td[0.5], td[0.9]), len(runs), confidence)
    return rows


def _frame_rows(
    label: str,
    keys: list[Key],
    points: tuple[np.ndarray, ...],
    draws: tuple[np.ndarray, ...],
    runs: int,
    confidence: float,
) -> list[EmergenceRow]:
    """Frame − precision per layer and precision metric: differences of emergence step, t50, t90."""
    where = {k: i for i, k in enumerate(keys)}
    rows = []
    for (metric, layer, head), i in where.items():
        if metric != FRAME:
            continue
        for prec in PRECISION:
            j = where.get((prec, layer, head))
            if j is None:
                continue
            vals: list[float] = []
            verdict = []
            for name, pt, dr in zip(("emergence", "t50", "t90"), points, draws):
                diff = pt[i] - pt[j]
                with np.errstate(invalid="ignore"):
                    lo, hi = step_interval((dr[i] - dr[j])[None], confidence)
                vals += [diff, lo[0], hi[0]]
                if name != "t50":
                    verdict.append(f"{name}: {_verdict(diff, lo[0], hi[0], pt[i], pt[j])}")
            rows.append(
                EmergenceRow(
                    label, f"frame_minus_{prec}", layer, *(_cell(v) for v in vals), runs, 0, "; ".join(verdict)
                )
            )
    return rows


def _verdict(diff: float, lo: float, hi: float, frame: float, precision: float) -> str:
    if math.isnan(frame) or math.isnan(precision):
        which = "frame" if math.isnan(frame) else "precision"
        return f"not testable ({which} shows no sustained change)"
    if hi < 0:
        return "frame first"
    if lo > 0:
        return "precision first"
    return "no order resolved (the interval holds 0)"


def write_emergence(rows: Sequence[EmergenceRow], directory: Path, sweep_uid: str = "") -> Path | None:
    """Write ``directory/emergence.parquet`` (atomically; needs pyarrow, else None). A file of that name that
    geoprobe did not write is never replaced (a one-line SweepError)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    from geoprobe.errors import SweepError
    from geoprobe.kinds import TABLE_KIND, file_kind

    target = directory / EMERGENCE
    if (target.exists() or target.is_symlink()) and file_kind(target) != TABLE_KIND:
        raise SweepError(
            f"{str(target)!r} is not a table geoprobe wrote: not replaced; move it away to get {EMERGENCE}"
        )
    data = [r.to_dict() for r in rows]
    schema = pa.schema(
        [
            ("series", pa.string()),
            ("metric", pa.string()),
            ("layer", pa.int64()),
            *((c, pa.float64()) for c in COLUMNS[3:12]),
            ("runs", pa.int64()),
            ("direction", pa.int64()),
            ("verdict", pa.string()),
        ]
    )
    table = pa.Table.from_pylist([{c: d[c] for c in COLUMNS} for d in data], schema=schema)
    table = table.replace_schema_metadata({"kind": TABLE_KIND, "sweep": sweep_uid, "table": "emergence"})
    tmp = directory / f".{EMERGENCE}.tmp"
    pq.write_table(table, tmp)
    tmp.replace(directory / EMERGENCE)
    return directory / EMERGENCE
