"""ScanResult: every number a scan measured, with provenance; saved as results.json.

The report is rebuilt from this file alone (``geoprobe report results.json``): figures are
made from results, never from the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from geoprobe.analysis.alignment import AlignmentProfile
from geoprobe.analysis.focusing import AttentionFocusing
from geoprobe.analysis.initnull import InitNull
from geoprobe.analysis.manifold import ManifoldProfile
from geoprobe.analysis.orthogonality import KeyOrthogonality
from geoprobe.analysis.tracking import AxisIdentifiability
from geoprobe.report.page import Page
from geoprobe.results import Result
from geoprobe.scan.config import ScanConfig
from geoprobe.scan.metrics import METRICS
from geoprobe.scan.scorecard import Scorecard

RESULTS_KIND = "geoprobe.scan"
RESULTS_VERSION = 1


@dataclass(frozen=True, eq=False)
class ScanResult(Result, Page):
    """Results of one scan: the four analyses, the scorecard, and where they came from. Its page
    (``figures()``, ``sections()``, ``report(path)``) is :mod:`geoprobe.scan.report`'s.

    The fields are in the order results.json stores them (the field-driven encoding writes them
    in field order), so that a file 0.1.0 wrote re-encodes byte for byte."""

    KIND = RESULTS_KIND
    VERSION = RESULTS_VERSION
    FILE = "results.json"
    PAGE = "report.html"
    WHAT = "scan results file"
    FIX = "pass the results.json that geoprobe scan wrote, or re-run geoprobe scan"

    model: str
    provenance: dict[str, Any]
    config: ScanConfig
    n_prompts: int
    layers: tuple[int, ...]
    n_layers: int
    scorecard: Scorecard
    timings: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # warnings raised during the scan (truncation, duplicates, ...)
    capture_dir: str | None = None  # the arrays for re-analysis, relative to results.json
    prompt_set: dict[str, Any] | None = None  # name, kind, hash, seed, sampling record (PromptSet.record())
    manifold: ManifoldProfile | None = None
    alignment: AlignmentProfile | None = None
    orthogonality: KeyOrthogonality | None = None
    focusing: AttentionFocusing | None = None
    #: the scorecard's null: the architecture at random initialisation on the same prompts (issue 37)
    init_null: InitNull | None = field(default=None, metadata={"omit_none": True})
    #: is each layer's value PC1 an axis (split-half stability, North's eigengap; issue 37): absent from older files
    identifiability: AxisIdentifiability | None = field(default=None, metadata={"omit_none": True})

    def rows(self) -> list[dict[str, Any]]:
        """The scan as tidy rows, one per layer × metric (geoprobe.scan.tidy)."""
        from geoprobe.scan.tidy import scan_rows

        return scan_rows(self)

    def __post_init__(self) -> None:
        if self.n_prompts < 1:
            raise ValueError(f"a scan needs prompts, got n_prompts={self.n_prompts}")
        if not self.layers or any(not 0 <= x < self.n_layers for x in self.layers):
            raise ValueError(f"layers {self.layers} out of range 0..{self.n_layers - 1}")
        for name in METRICS:  # every analysis covers the scan's layers
            part = getattr(self, name)
            if part is not None and tuple(part.layers) != tuple(self.layers):
                raise ValueError(f"{name} covers layers {tuple(part.layers)}, the scan {self.layers}")
        for where, n in self._per_prompt_counts():
            if n != self.n_prompts:
                raise ValueError(f"n_prompts is {self.n_prompts} but {where} holds {n} prompts")

    def _per_prompt_counts(self) -> list[tuple[str, int]]:
        """(where, how many prompts) for every per-prompt record the analyses hold: each must equal
        ``n_prompts``, so a results.json whose count was edited or damaged is caught on load."""
        counts = []
        for name in ("manifold", "alignment", "focusing", "identifiability"):
            part = getattr(self, name)
            if part is not None:
                counts.append((f"{name}.n", int(part.n)))
        if self.manifold is not None:
            counts.append(("manifold.next_entropy", len(self.manifold.next_entropy)))
            counts += [(f"manifold.pc1_coords[{i}]", len(row)) for i, row in enumerate(self.manifold.pc1_coords)]
        if self.focusing is not None:
            counts += [(f"focusing.per_prompt[{i}]", len(row)) for i, row in enumerate(self.focusing.per_prompt)]
        return counts
