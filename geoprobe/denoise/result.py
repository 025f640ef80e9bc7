"""The denoising result: MSEs with bootstrap CIs against the oracle, learned-weight structure, sweeps over the
context length and the subspace dimension, the warped-geometry run and the energy view (its page and
figures: :mod:`geoprobe.denoise.report`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from geoprobe.analysis.stats import Estimate
from geoprobe.report.page import Page
from geoprobe.results import Result
from geoprobe.serial import Record, decode

#: the issue's target: trained softmax attention's MSE at most this multiple of the oracle (Bayes) MSE
TARGET_RATIO = 1.05


@dataclass(frozen=True, eq=False)
class Score(Record):
    """One method's MSE per coordinate (mean over prompts, bootstrap CI) and its paired ratio to the oracle."""

    method: str
    mse: Estimate
    ratio: Estimate | None = None


@dataclass(frozen=True, eq=False)
class Block(Record):
    """Scores at one setting of a sweep (``key`` = the context length L or the test dimension d')."""

    key: int
    scores: tuple[Score, ...]

    def __post_init__(self) -> None:
        if not self.scores:
            raise ValueError(f"block {self.key} has no scores")

    def get(self, method: str) -> Score:
        for s in self.scores:
            if s.method == method:
                return s
        raise KeyError(method)


@dataclass(frozen=True, eq=False)
class Fit(Record):
    """A learned matrix against a predicted structure S: W ≈ c·S (least squares), residual ‖W − cS‖_F/‖W‖_F."""

    model: str
    matrix: str  # W_KQ | W_PV | W_PV·W_KQ
    structure: str  # "I" or "(AAᵀ)⁻¹"
    c: float
    residual: float
    predicted: float | None = None  # the predicted c (None where we have no prediction)


@dataclass(frozen=True, eq=False)
class DenoiseResult(Result, Page):
    """Everything ``geoprobe denoise`` measured on one task."""

    KIND: ClassVar[str] = "geoprobe.denoise"
    FILE: ClassVar[str] = "denoise.json"
    PAGE: ClassVar[str | None] = "denoise.html"
    WHAT: ClassVar[str] = "denoising results file"
    FIX: ClassVar[str] = "pass the denoise.json that 'geoprobe denoise' wrote, or re-run it"

    task: dict[str, Any]
    config: dict[str, Any]
    scores: tuple[Score, ...]  # at the training context length, on n_eval prompts
    fits: tuple[Fit, ...]
    lengths: tuple[Block, ...] = ()  # MSE vs L (models trained at the task's L)
    transfer: tuple[Block, ...] = ()  # MSE at test dimension d' (models trained at d)
    warp: dict[str, Any] | None = None  # {"condition", "matrix", "scores", "fits", "matrices"}
    energy: dict[str, Any] | None = None
    matrices: dict[str, dict[str, list[list[float]]]] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_body(cls, d: dict[str, Any]) -> "DenoiseResult":  # warp is a plain dict holding Scores and Fits
        values = cls.field_values(d)
        warp = values.get("warp")
        if warp is not None:
            values["warp"] = {
                **warp,
                "scores": decode(tuple[Score, ...], warp["scores"]),
                "fits": decode(tuple[Fit, ...], warp["fits"]),
            }
        return cls(**values)

    def __post_init__(self) -> None:
        if self.task.get("name") not in ("linear", "mixture", "sphere"):
            raise ValueError(f"unknown task {self.task.get('name')!r}")
        methods = [s.method for s in self.scores]
        if "oracle" not in methods:
            raise ValueError("a denoising result needs the oracle (Bayes) score")
        if len(set(methods)) != len(methods):
            raise ValueError(f"duplicate methods {methods}")
        for b in self.lengths + self.transfer:
            if "oracle" not in [s.method for s in b.scores]:
                raise ValueError(f"sweep block {b.key} has no oracle score")

    @property
    def name(self) -> str:
        return self.task["name"]

    def score(self, method: str) -> Score:
        for s in self.scores:
            if s.method == method:
                return s
        raise KeyError(f"no score for {method!r}; have {[s.method for s in self.scores]}")

    def checks(self) -> list[dict[str, Any]]:
        """The issue's target: trained softmax attention within 1.05× of the oracle MSE (point estimate; the CI
        of the paired ratio is reported beside it)."""
        rows = []
        for method in ("softmax", "linear"):
            try:
                r = self.score(method).ratio
            except KeyError:
                continue
            if r is None:
                continue
            rows.append(
                {
                    "check": f"{method} attention MSE / Bayes MSE ≤",
                    "target": TARGET_RATIO,
                    "measured": r.value,
                    "ci": f"[{r.low:.4f}, {r.high:.4f}]",
                    "pass": r.value <= TARGET_RATIO,
                    "required": method == "softmax",
                }
            )
        return rows


__all__ = ["Block", "DenoiseResult", "Fit", "Score", "TARGET_RATIO"]
