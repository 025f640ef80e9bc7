"""Frame vs precision across training seeds (arXiv 2512.22473; issue 37 item 4): the tested difference.

One run's ``t90_frame < t90_precision`` (:mod:`geoprobe.windtunnel.geometry`) is one draw of a training
run. Here training seeds are the replicates: per seed, ``d = log(t90_frame + 1) − log(t90_precision + 1)``
(the scale t90 is interpolated on; also in steps), then the mean of d over seeds with its Student-t
interval (n − 1 degrees of freedom, :func:`geoprobe.analysis.stats.t_interval`) and a verdict:

* ``"frame first"`` only when the interval (log units) lies below 0, ``"precision first"`` above;
* ``"no dissociation detected (k seeds)"`` otherwise;
* fewer than 2 seeds with both t90s defined: no interval, ``"one seed: not testable"`` (or no seed).

A seed whose t90 is undefined (its entropy error did not fall, or its attention never moved) is listed with
the reason and left out of the mean; ``n_seeds`` counts the seeds that entered it.

The runs come from ``geoprobe windtunnel run --seeds`` (seeds.json carries the result, :class:`TunnelSeeds`),
from a ``geoprobe sweep`` over the wind tunnel's ``seed``, or from any run directories: :func:`read_runs`
groups what it finds by task and settings.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from geoprobe.analysis.stats import Estimate, t_interval
from geoprobe.errors import GeoprobeError
from geoprobe.serial import Record
from geoprobe.text import number
from geoprobe.windtunnel.result import WindTunnelResult
from geoprobe.windtunnel.t90 import log_gap


def verdict(difference: Estimate, k: int) -> str:
    """The claim the interval of ``mean d`` (log units) over ``k`` seeds allows."""
    if k == 0:
        return "no seed with both t90s defined: not testable"
    if k < 2 or not (math.isfinite(difference.low) and math.isfinite(difference.high)):
        return "one seed: not testable"
    if difference.high < 0:
        return "frame first"
    if difference.low > 0:
        return "precision first"
    return f"no dissociation detected ({k} seeds)"


@dataclass(frozen=True, eq=False)
class SeedT90(Record):
    """One training seed's t90s (steps; NaN: undefined) and their difference."""

    seed: int
    t90_frame: float
    t90_precision: float
    difference_log: float  # log(t90_frame + 1) − log(t90_precision + 1)
    difference_steps: float  # t90_frame − t90_precision
    prompt_interval: Estimate | None = None  # this run's bootstrap interval of difference_log over its prompts
    note: str = ""  # why a t90 is undefined ("" when both are defined)

    @property
    def defined(self) -> bool:
        return math.isfinite(self.difference_log)


@dataclass(frozen=True, eq=False)
class FramePrecision(Record):
    """Frame vs precision over training seeds: per seed, the mean difference with its t interval, the verdict."""

    task: str
    seeds: tuple[SeedT90, ...]
    difference_log: Estimate  # mean over defined seeds of d (log(step + 1) units), Student-t interval
    difference_steps: Estimate  # the same in steps
    verdict: str
    n_seeds: int  # seeds that entered the mean (both t90s defined)
    confidence: float = 0.95

    @classmethod
    def of(
        cls,
        task: str,
        seeds: Sequence[int],
        t90_frame: Sequence[float],
        t90_precision: Sequence[float],
        *,
        prompt_intervals: Sequence[Estimate | None] | None = None,
        confidence: float = 0.95,
    ) -> "FramePrecision":
        """From per-seed t90s (steps; NaN for an undefined one)."""
        if not (len(seeds) == len(t90_frame) == len(t90_precision)):
            raise ValueError("one t90_frame and one t90_precision per seed")
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds {list(seeds)} repeat a seed")
        spans = list(prompt_intervals) if prompt_intervals is not None else [None] * len(seeds)
        rows = []
        for s, tf, tp, span in zip(seeds, t90_frame, t90_precision, spans):
            tf, tp = float(tf), float(tp)
            note = "; ".join(
                why
                for bad, why in (
                    (not math.isfinite(tf), "frame undefined: the attention patterns never moved"),
                    (not math.isfinite(tp), "precision undefined: the entropy error did not fall"),
                )
                if bad
            )
            rows.append(SeedT90(int(s), tf, tp, log_gap(tf, tp), tf - tp, span, note))
        ok = [r for r in rows if r.defined]
        d_log = _mean(np.array([r.difference_log for r in ok]), confidence)
        d_steps = _mean(np.array([r.difference_steps for r in ok]), confidence)
        return cls(task, tuple(rows), d_log, d_steps, verdict(d_log, len(ok)), len(ok), confidence)

    @classmethod
    def of_results(cls, results: Iterable[WindTunnelResult], confidence: float = 0.95) -> "FramePrecision":
        """From one WindTunnelResult per training seed (each evaluated with geometry)."""
        results = list(results)
        if not results:
            raise GeoprobeError("no wind-tunnel results to compare across seeds")
        for r in results:
            if r.geometry is None:
                raise GeoprobeError(
                    f"the {r.name} run of seed {run_seed(r)} was evaluated without geometry, so it has no t90s; "
                    "re-evaluate it with 'geoprobe windtunnel eval RUN' (geometry is on by default)"
                )
        geos = [r.geometry for r in results]
        return cls.of(
            results[0].name,
            [run_seed(r) for r in results],
            [g.t90_frame for g in geos],  # type: ignore[union-attr]
            [g.t90_precision for g in geos],  # type: ignore[union-attr]
            prompt_intervals=[g.t90_interval.difference if g.t90_interval else None for g in geos],  # type: ignore[union-attr]
            confidence=confidence,
        )

    def rows(self) -> list[dict[str, str]]:
        """One row per seed, then the mean over seeds (the report's and the command line's table)."""
        out = []
        for r in self.seeds:
            span = r.prompt_interval
            out.append(
                {
                    "seed": str(r.seed),
                    "t90 frame (step)": _step(r.t90_frame),
                    "t90 precision (step)": _step(r.t90_precision),
                    "d = log(t90f+1) − log(t90p+1)": f"{number(r.difference_log, '+.3f')}" if r.defined else "—",
                    "d (steps)": f"{number(r.difference_steps, '+.0f')}" if r.defined else "—",
                    "d over prompts (95 % bootstrap)": _span(span) if r.defined else r.note,
                }
            )
        out.append(
            {
                "seed": f"mean ({self.n_seeds} seed{'' if self.n_seeds == 1 else 's'})",
                "t90 frame (step)": "",
                "t90 precision (step)": "",
                "d = log(t90f+1) − log(t90p+1)": _est(self.difference_log, "+.3f"),
                "d (steps)": _est(self.difference_steps, "+.0f"),
                "d over prompts (95 % bootstrap)": f"over seeds: {self.verdict}",
            }
        )
        return out

    def summary(self) -> str:
        """One line: the mean difference with its interval and the verdict."""
        return (
            f"{self.task}: d = log(t90 frame + 1) − log(t90 precision + 1) = {_est(self.difference_log, '+.3f')} "
            f"over {self.n_seeds} seeds (95 % t; steps {_est(self.difference_steps, '+.0f')}): {self.verdict}"
        )


def run_seed(result: WindTunnelResult) -> int:
    """The training seed a wind-tunnel result was trained with."""
    return int(result.specs["transformer"]["train"]["seed"])


def result_files(path: str | Path) -> list[Path]:
    """The windtunnel.json files under ``path``: the file itself, a run directory, a ``--seeds`` directory
    (``seed-N/``) or a sweep (``cells/<id>/``)."""
    p = Path(path)
    if p.is_file():
        return [p]
    name = WindTunnelResult.FILE
    if (p / name).is_file():
        return [p / name]
    found = sorted(p.glob(f"seed-*/{name}")) + sorted(p.glob(f"cells/*/{name}"))
    if not found:
        raise GeoprobeError(
            f"{str(p)!r} holds no {name} (nor seed-*/{name}, cells/*/{name}); pass wind-tunnel run directories, "
            "a 'windtunnel run --seeds' directory or a sweep over the wind tunnel"
        )
    return found


def settings_key(result: WindTunnelResult) -> str:
    """What must agree for runs to be replicates of one another: the transformer's spec but its seed."""
    spec = json.loads(json.dumps(result.specs["transformer"]))
    spec.get("train", {}).pop("seed", None)
    return json.dumps({"scale": result.scale, "spec": spec}, sort_keys=True)


def read_runs(paths: Iterable[str | Path], confidence: float = 0.95) -> dict[str, FramePrecision]:
    """Frame vs precision per task from the wind-tunnel runs under ``paths`` (see :func:`result_files`),
    grouped by task and settings (runs that differ in anything but the seed are not pooled): label ->
    :class:`FramePrecision`. A seed found twice in one group is refused in one line."""
    groups: dict[str, list[tuple[Path, WindTunnelResult]]] = {}
    for path in paths:
        for f in result_files(path):
            r = WindTunnelResult.load(f)
            groups.setdefault(settings_key(r), []).append((f, r))
    out: dict[str, FramePrecision] = {}
    for members in groups.values():
        seen: dict[int, Path] = {}
        for f, r in members:
            s = run_seed(r)
            if s in seen:
                raise GeoprobeError(
                    f"seed {s} appears twice with the same settings: {seen[s]} and {f}; pass one of them"
                )
            seen[s] = f
        first = members[0][1]
        steps = first.specs["transformer"]["train"]["steps"]
        label = f"{first.name} ({first.scale}, {first.convention}, {steps} steps)"
        while label in out:
            label += "'"
        members.sort(key=lambda m: run_seed(m[1]))
        out[label] = FramePrecision.of_results([r for _, r in members], confidence)
    return out


def _mean(d: np.ndarray, confidence: float) -> Estimate:
    if d.size == 0:
        return Estimate(math.nan, math.nan, math.nan, confidence)
    return t_interval(d, confidence)


def _step(t: float) -> str:
    return f"{t:,.0f}" if math.isfinite(t) else "undefined"


def _est(e: Estimate, spec: str) -> str:
    if not math.isfinite(e.value):
        return "—"
    if not (math.isfinite(e.low) and math.isfinite(e.high)):
        return f"{format(e.value, spec)} (no interval)"
    return f"{format(e.value, spec)} [{format(e.low, spec)}, {format(e.high, spec)}]"


def _span(e: Any) -> str:
    if e is None:
        return "not stored (re-evaluate the run)"
    if not (math.isfinite(e.low) and math.isfinite(e.high)):
        return "undefined in some draws"
    return f"[{number(e.low, '+.3f')}, {number(e.high, '+.3f')}]"


def by_task(found: Mapping[str, FramePrecision]) -> list[dict[str, str]]:
    """One row per group of :func:`read_runs`: the mean difference and the verdict."""
    return [
        {
            "task (settings)": label,
            "seeds": ", ".join(str(s.seed) for s in fp.seeds),
            "mean d, log(step+1) [95 % t]": _est(fp.difference_log, "+.3f"),
            "mean d, steps [95 % t]": _est(fp.difference_steps, "+.0f"),
            "verdict": fp.verdict,
        }
        for label, fp in found.items()
    ]


__all__ = ["FramePrecision", "SeedT90", "by_task", "read_runs", "result_files", "run_seed", "settings_key", "verdict"]
