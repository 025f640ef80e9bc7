"""ScanResult: every number a scan measured, with provenance; saved as results.json.

The report is rebuilt from this file alone (``geoprobe report results.json``): figures are
made from results, never from the model.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geoprobe.errors import ResultsError
from geoprobe.paths import JsonResult
from geoprobe.scan.config import ScanConfig
from geoprobe.scan.scorecard import Scorecard

RESULTS_KIND = "geoprobe.scan"
RESULTS_VERSION = 1


def _analysis_types() -> dict[str, Any]:
    from geoprobe.analysis.alignment import AlignmentProfile
    from geoprobe.analysis.focusing import AttentionFocusing
    from geoprobe.analysis.manifold import ManifoldProfile
    from geoprobe.analysis.orthogonality import KeyOrthogonality

    return {"manifold": ManifoldProfile, "alignment": AlignmentProfile, "orthogonality": KeyOrthogonality,
            "focusing": AttentionFocusing}


def _json_safe(x: Any) -> Any:
    """NaN/Inf become None (strict JSON); everything else passes through."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


@dataclass(frozen=True, eq=False)
class ScanResult(JsonResult):
    """Results of one scan: the four analyses, the scorecard, and where they came from."""

    _file = "results.json"
    _page = "report.html"
    _what = "results file"
    _fix = "pass the results.json a scan wrote"

    model: str
    provenance: dict[str, Any]
    config: ScanConfig
    n_prompts: int
    layers: tuple[int, ...]
    n_layers: int
    scorecard: Scorecard
    manifold: Any = None  # ManifoldProfile
    alignment: Any = None  # AlignmentProfile
    orthogonality: Any = None  # KeyOrthogonality
    focusing: Any = None  # AttentionFocusing
    timings: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # warnings raised during the scan (truncation, duplicates, ...)
    capture_dir: str | None = None  # the arrays for re-analysis, relative to results.json
    prompt_set: dict[str, Any] | None = None  # name, kind, hash, seed, sampling record (PromptSet.record())

    def __post_init__(self) -> None:
        if self.n_prompts < 1:
            raise ValueError(f"a scan needs prompts, got n_prompts={self.n_prompts}")
        if not self.layers or any(not 0 <= x < self.n_layers for x in self.layers):
            raise ValueError(f"layers {self.layers} out of range 0..{self.n_layers - 1}")
        for name in ("manifold", "alignment", "orthogonality", "focusing"):
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
        for name in ("manifold", "alignment", "focusing"):
            part = getattr(self, name)
            if part is not None:
                counts.append((f"{name}.n", int(part.n)))
        if self.manifold is not None:
            counts.append(("manifold.next_entropy", len(self.manifold.next_entropy)))
            counts += [(f"manifold.pc1_coords[{i}]", len(row)) for i, row in enumerate(self.manifold.pc1_coords)]
        if self.focusing is not None:
            counts += [(f"focusing.per_prompt[{i}]", len(row)) for i, row in enumerate(self.focusing.per_prompt)]
        return counts

    # -- persistence ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        from geoprobe import __version__

        d: dict[str, Any] = {
            "kind": RESULTS_KIND,
            "version": RESULTS_VERSION,
            "geoprobe": __version__,
            "model": self.model,
            "provenance": self.provenance,
            "config": self.config.to_dict(),
            "n_prompts": self.n_prompts,
            "layers": list(self.layers),
            "n_layers": self.n_layers,
            "scorecard": self.scorecard.to_dict(),
            "timings": self.timings,
            "notes": list(self.notes),
            "capture_dir": self.capture_dir,
            "prompt_set": self.prompt_set,
        }
        for name in _analysis_types():
            part = getattr(self, name)
            d[name] = None if part is None else part.to_dict()
        return _json_safe(d)

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "results") -> "ScanResult":
        from geoprobe.paths import check_results_kind

        d = check_results_kind(d, kind=RESULTS_KIND, version=RESULTS_VERSION, source=source, what="scan results file",
                               fix="pass the results.json that geoprobe scan wrote, or re-run geoprobe scan")
        try:
            parts = {name: (None if d.get(name) is None else typ.from_dict(d[name]))
                     for name, typ in _analysis_types().items()}
            return cls(model=d["model"], provenance=d["provenance"], config=ScanConfig.from_dict(d["config"]),
                       n_prompts=d["n_prompts"], layers=tuple(d["layers"]), n_layers=d["n_layers"],
                       scorecard=Scorecard.from_dict(d["scorecard"]), timings=d.get("timings", {}),
                       notes=tuple(d.get("notes", ())), capture_dir=d.get("capture_dir"),
                       prompt_set=d.get("prompt_set"), **parts)
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsError(f"{source} is damaged ({type(exc).__name__}: {exc}); re-run geoprobe scan") from None

    # -- views ------------------------------------------------------------------------------
    def figures(self) -> list[tuple[str, str, Any]]:
        """(anchor, caption, plotly Figure) in report order."""
        from geoprobe.report.figures import scan_figures

        return scan_figures(self)

    def report(self, path: str | os.PathLike, *, force: bool = False) -> Path:
        """Write the self-contained HTML report."""
        from geoprobe.report.html import write_report

        return write_report(self, path, force=force)

    def _repr_html_(self) -> str:  # Jupyter shows the scorecard table
        from geoprobe.report.html import scorecard_table

        return scorecard_table(self.scorecard)
