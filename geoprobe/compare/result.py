"""The result of ``geoprobe compare``: :class:`ModelComparison` (``comparison.json``), built by
:func:`geoprobe.compare.run.compare_results`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from geoprobe.compare.global_pca import GlobalPCA
from geoprobe.compare.inputs import Source
from geoprobe.compare.table import ComparisonRow, display_rows
from geoprobe.report.page import Page
from geoprobe.results import Result


@dataclass(frozen=True, eq=False, kw_only=True)
class ModelComparison(Result, Page):
    """Table-2 rows (one per model), the global PCA (None when skipped, with a note saying why),
    notes and warnings, the sources (results files with their prompt-set hashes) and provenance.
    Equality compares ``to_dict()``."""

    KIND = "geoprobe.compare"
    VERSION = 1
    FILE = "comparison.json"
    PAGE = "compare.html"
    WHAT = "comparison file"
    FIX = "pass the comparison.json that geoprobe compare wrote, or re-run geoprobe compare"

    rows: tuple[ComparisonRow, ...]
    global_pca: GlobalPCA | None = None
    notes: tuple[str, ...] = ()
    sources: tuple[Source, ...]
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("rows", "notes", "sources"):
            set_(self, name, tuple(getattr(self, name)))
        if not self.rows or any(not isinstance(r, ComparisonRow) for r in self.rows):
            raise ValueError("a comparison needs ComparisonRow rows")
        models = [r.model for r in self.rows]
        if len(set(models)) != len(models):
            raise ValueError(f"one row per model, got {models}")
        if len(self.sources) < 2 or any(not isinstance(s, Source) for s in self.sources):
            raise ValueError("a comparison needs at least two Source records")
        if not set(models) <= {s.model for s in self.sources}:
            raise ValueError("every row's model must come from a source")
        if self.global_pca is not None:
            if not isinstance(self.global_pca, GlobalPCA) or not set(self.global_pca.models) <= set(models):
                raise ValueError("the global PCA must be a GlobalPCA over the rows' models")
        set_(self, "notes", tuple(str(n) for n in self.notes))
        set_(self, "provenance", dict(self.provenance))

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(r.model for r in self.rows)

    def row(self, model: str) -> ComparisonRow:
        for r in self.rows:
            if r.model == model:
                return r
        raise KeyError(model)

    # -- views ------------------------------------------------------------------------------
    def table(self) -> list[dict[str, str]]:
        """The Table-2 analogue as formatted strings: one row per model and restricted domain."""
        return display_rows(self.rows)
