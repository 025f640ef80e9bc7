"""Several seeds of one wind tunnel (arXiv 2512.22471, Figure 11): the spread of the entropy error.

``geoprobe windtunnel run --seeds 0,1,2`` (or ``--seeds 3``: three seeds from ``--seed``) trains and
evaluates one complete run per seed, ``OUT/seed-N/`` (each an ordinary run directory: checkpoints,
``windtunnel.json``, ``windtunnel.html``), then writes :class:`TunnelSeeds` (``OUT/seeds.json``, and
its page ``OUT/seeds.html``, :mod:`geoprobe.windtunnel.report.seeds`): every seed's metrics and, per
learner and evaluation length, the spread of the per-seed MAE (mean, standard deviation, min–max and a
Student-t interval for the mean over seeds), and, when every seed was probed over training, frame vs
precision across the seeds (:class:`geoprobe.windtunnel.frame.FramePrecision`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from geoprobe.analysis.stats import Estimate, t_interval
from geoprobe.checks import check_seed
from geoprobe.errors import GeoprobeError
from geoprobe.report.page import Page
from geoprobe.results import Result
from geoprobe.serial import Record
from geoprobe.windtunnel.evaluate import TunnelMetrics
from geoprobe.windtunnel.frame import FramePrecision

#: how many seeds one --seeds may ask for
MAX_SEEDS = 50
#: the per-seed measures whose spread is reported (TunnelMetrics fields)
MEASURES = ("mae_paper", "mae_sample", "kl")
_FLAG = "--seeds (seeds in a probe recipe)"


def parse_seeds(value: Any, where: str = _FLAG) -> int | tuple[int, ...]:
    """``--seeds``: a count N (an integer, or a string of one: N seeds from ``--seed``) or a list of
    distinct seeds (``"0,1,2"``, a TOML list); a one-line error for anything else."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        if not value.strip() or any(not p.lstrip("-").isdigit() for p in parts):
            raise GeoprobeError(
                f"seeds {value!r} is neither a count nor a comma-separated list of integers; pass {where} "
                "as a count (--seeds 3) or a list (--seeds 0,1,2)"
            )
        value = int(parts[0]) if len(parts) == 1 else tuple(int(p) for p in parts)
    if isinstance(value, (list, tuple)):
        seeds = tuple(check_seed(s, where) for s in value)
        if len(seeds) < 2 or len(seeds) > MAX_SEEDS:
            raise GeoprobeError(
                f"seeds {list(seeds)} lists {len(seeds)} seeds; a spread needs 2 to {MAX_SEEDS}: pass {where} "
                "with 2 or more seeds (or --seed for a single run)"
            )
        if len(set(seeds)) != len(seeds):
            raise GeoprobeError(f"seeds {list(seeds)} repeats a seed; pass {where} with distinct seeds")
        return seeds
    if isinstance(value, bool) or not isinstance(value, int):
        raise GeoprobeError(f"seeds {value!r} is not a count or a list of seeds; pass {where} as 3 or 0,1,2")
    if not 2 <= value <= MAX_SEEDS:
        raise GeoprobeError(
            f"seeds = {value} is out of range [2, {MAX_SEEDS}] (a count); pass {where} between 2 and "
            f"{MAX_SEEDS} (or --seed for a single run)"
        )
    return value


def seed_list(seeds: int | tuple[int, ...], start: int) -> tuple[int, ...]:
    """The seeds to run: ``start, start + 1, …`` for a count, the list itself otherwise."""
    if isinstance(seeds, tuple):
        if start != 0:
            raise GeoprobeError(
                f"--seed {start} with a list of seeds: the list names every seed; drop --seed, or pass "
                "--seeds as a count to start the seeds at --seed"
            )
        return seeds
    return tuple(check_seed(start + i, "--seed (the first of --seeds)") for i in range(seeds))


def seed_dir_name(seed: int) -> str:
    return f"seed-{seed}"


@dataclass(frozen=True, eq=False)
class SeedSpread(Record):
    """One measure (bits) of one learner at one length across seeds."""

    measure: str
    K: int
    values: tuple[float, ...]  # one per seed, in the order of TunnelSeeds.seeds
    mean: Estimate  # mean over seeds with its Student-t interval (n − 1 degrees of freedom)
    sd: float  # sample standard deviation (ddof = 1)
    min: float
    max: float

    @classmethod
    def of(cls, measure: str, K: int, values: Any, confidence: float = 0.95) -> "SeedSpread":
        a = np.asarray(values, dtype=np.float64)
        m = float(a.mean())
        sd = float(a.std(ddof=1)) if a.size > 1 else math.nan
        ci = t_interval(a, confidence)
        if not math.isfinite(ci.low):  # one seed: the mean alone
            ci = Estimate(m, m, m, confidence)
        return cls(measure, K, tuple(float(x) for x in a), ci, sd, float(a.min()), float(a.max()))


@dataclass(frozen=True, eq=False)
class SeedRun(Record):
    """One seed's run: where it is and what it measured (its windtunnel.json holds the rest)."""

    seed: int
    run: str  # the run directory, relative to the seeds result's directory
    metrics: dict[str, tuple[TunnelMetrics, ...]]  # arch -> one per evaluation length
    weights: dict[str, str] = field(default_factory=dict)  # arch -> sha256 of the final weights


@dataclass(frozen=True, eq=False)
class TunnelSeeds(Result, Page):
    """One wind tunnel trained and evaluated once per seed (``geoprobe windtunnel run --seeds``)."""

    KIND: ClassVar[str] = "geoprobe.windtunnel.seeds"
    FILE: ClassVar[str] = "seeds.json"
    PAGE: ClassVar[str | None] = "seeds.html"
    WHAT: ClassVar[str] = "wind-tunnel seeds results file"
    FIX: ClassVar[str] = "pass the seeds.json that 'geoprobe windtunnel run --seeds' wrote, or re-run it"

    task: dict[str, Any]
    scale: str
    runs: tuple[SeedRun, ...]
    provenance: dict[str, Any] = field(default_factory=dict)
    # the t90s of frame and precision per seed, their mean difference and verdict (None without geometry;
    # absent from files written before it)
    frame_precision: FramePrecision | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        if len(self.runs) < 2:
            raise ValueError(f"a seeds result needs 2 or more runs, found {len(self.runs)}")
        if len({r.seed for r in self.runs}) != len(self.runs):
            raise ValueError("a seed appears twice")
        first = self.runs[0].metrics
        for r in self.runs:
            shape = {a: [m.K for m in ms] for a, ms in r.metrics.items()}
            if shape != {a: [m.K for m in ms] for a, ms in first.items()}:
                raise ValueError(f"seed {r.seed} has learners and lengths {shape}, seed {self.runs[0].seed} others")

    @classmethod
    def from_results(cls, results: dict[int, Any], runs: dict[int, str], provenance: dict[str, Any]) -> "TunnelSeeds":
        """Collect each seed's WindTunnelResult (seed -> result, seed -> its run directory)."""
        seeds = list(results)
        first = results[seeds[0]]
        for s in seeds[1:]:
            r = results[s]
            if r.task != first.task or r.scale != first.scale:
                raise ValueError(f"seed {s} ran {r.task} at {r.scale}, seed {seeds[0]} {first.task} at {first.scale}")
        probed = all(results[s].geometry is not None for s in seeds)
        return cls(
            task=dict(first.task),
            scale=first.scale,
            runs=tuple(
                SeedRun(s, runs[s], dict(results[s].metrics), dict(results[s].provenance.get("weights") or {}))
                for s in seeds
            ),
            provenance=provenance,
            frame_precision=FramePrecision.of_results([results[s] for s in seeds]) if probed else None,
        )

    @property
    def name(self) -> str:
        return str(self.task.get("name"))

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(r.seed for r in self.runs)

    @property
    def learners(self) -> tuple[str, ...]:
        return tuple(self.runs[0].metrics)

    def lengths(self, arch: str = "transformer") -> tuple[int, ...]:
        return tuple(m.K for m in self.runs[0].metrics[arch])

    def spread(self, arch: str, K: int | None = None, measure: str = "mae_paper") -> SeedSpread:
        """``measure`` of ``arch`` at length ``K`` (default the training length) across seeds."""
        K = self.task["K"] if K is None else K
        if measure not in MEASURES:
            raise KeyError(f"measure {measure!r} is not one of {MEASURES}")
        values = []
        for r in self.runs:
            m = next((m for m in r.metrics[arch] if m.K == K), None)
            if m is None:
                raise KeyError(f"{arch} was not evaluated at K = {K}")
            values.append(getattr(m, measure).value)
        return SeedSpread.of(measure, K, values)

    def spread_rows(self) -> list[dict[str, str]]:
        rows = []
        for arch in self.learners:
            for K in self.lengths(arch):
                for measure in MEASURES:
                    s = self.spread(arch, K, measure)
                    rows.append(
                        {
                            "learner": arch,
                            "K": str(K),
                            "measure (bits)": _MEASURE_NAMES[measure],
                            "per seed": ", ".join(f"{v:.4g}" for v in s.values),
                            "mean [95 % t interval]": f"{s.mean:.4g}",
                            "sd": f"{s.sd:.2g}",
                            "min–max": f"{s.min:.4g}–{s.max:.4g}",
                        }
                    )
        return rows


_MEASURE_NAMES = {"mae_paper": "MAE paper def.", "mae_sample": "MAE per sample", "kl": "KL(Bayes‖model)"}
__all__ = ["MAX_SEEDS", "SeedRun", "SeedSpread", "TunnelSeeds", "parse_seeds", "seed_dir_name", "seed_list"]
