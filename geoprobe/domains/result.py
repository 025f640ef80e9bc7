"""The result of ``geoprobe compare-domains``: every prompt set's value-manifold statistics and the
contrasts between them (:class:`DomainComparison`, stored as ``domains.json``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from geoprobe.analysis.contrast import DomainContrast, check_ratio
from geoprobe.analysis.stats import Estimate, NullBand
from geoprobe.domains.config import CONTROL_SUFFIX, KINDS, SetKind
from geoprobe.report.page import Page
from geoprobe.results import Result
from geoprobe.sampling import MIXED
from geoprobe.serial import Record


@dataclass(frozen=True, eq=False)
class SetSummary(Record):
    """One prompt set: its value-manifold statistics (bootstrap-SE intervals), its Gaussian null
    band, and descriptors (mean next-token entropy in bits, mean prompt length in tokens)."""

    name: str
    kind: SetKind
    domain: str | None
    n: int
    prompts_hash: str
    pc1: Estimate
    pc12: Estimate
    pr: Estimate
    null: NullBand
    mean_entropy: float
    mean_tokens: float

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"set name must be a non-empty string, got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"set {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        if (self.kind == "mixed") != (self.domain is None):
            raise ValueError(
                f"set {self.name!r} ({self.kind}): domain {self.domain!r}; a mixed set has no domain, "
                "a restricted or control set names one"
            )
        object.__setattr__(self, "n", int(self.n))
        object.__setattr__(self, "mean_entropy", float(self.mean_entropy))
        object.__setattr__(self, "mean_tokens", float(self.mean_tokens))
        if self.n < 3:
            raise ValueError(f"set {self.name!r} has n = {self.n}; need >= 3")
        check_ratio(self.pc1, f"set {self.name!r} pc1")
        check_ratio(self.pc12, f"set {self.name!r} pc12")
        check_ratio(self.pr, f"set {self.name!r} pr", 1.0, math.inf)
        if not isinstance(self.null, NullBand) or self.null.n != self.n:
            raise ValueError(f"set {self.name!r}: null must be a NullBand with n = {self.n}")

    @property
    def beats_null_pc1(self) -> bool:
        return bool(self.pc1.value > self.null.pc1.high)


def fmt_p(p: float) -> str:
    """A p-value with two significant digits, or n/a."""
    return "n/a" if not math.isfinite(p) else f"{p:.2g}"


def _fmt_ci(e: Estimate, scale: float = 1.0, sign: bool = False) -> str:
    """``e`` scaled (e.g. to %), with one decimal and its interval; ``sign`` shows a + on positives."""
    return format(Estimate(scale * e.value, scale * e.low, scale * e.high, e.confidence), "+.1f" if sign else ".1f")


@dataclass(frozen=True, eq=False)
class DomainComparison(Result, Page):
    """Mixed-domain vs domain-restricted value manifolds of one layer (the Table-1 analogue),
    with matched mixed-domain controls. ``contrasts`` holds, per domain d: (mixed → d),
    (mixed → d-control) when a control exists, and (d-control → d); Δ is always label_b −
    label_a. Each family of contrasts is Bonferroni-adjusted across domains (``n_tests``)."""

    KIND = "geoprobe.domains"
    VERSION = 1
    FILE = "domains.json"
    PAGE = "domains.html"
    WHAT = "domain comparison"
    FIX = "pass the domains.json geoprobe compare-domains wrote, or re-run the comparison"

    model: str
    layer: int
    domains: tuple[str, ...]
    sets: dict[str, SetSummary]
    contrasts: tuple[DomainContrast, ...]
    balance: dict[str, dict[str, float]]
    provenance: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "layer", int(self.layer))
        object.__setattr__(self, "domains", tuple(str(d) for d in self.domains))
        object.__setattr__(self, "contrasts", tuple(self.contrasts))
        object.__setattr__(self, "notes", tuple(str(s) for s in self.notes))
        object.__setattr__(self, "provenance", dict(self.provenance or {}))
        sets = dict(self.sets)
        if any(not isinstance(s, SetSummary) or s.name != k for k, s in sets.items()):
            raise ValueError("sets must map each set's name to its SetSummary")
        mixed = [k for k, s in sets.items() if s.kind == "mixed"]
        if mixed != [MIXED]:
            raise ValueError(f"exactly one mixed set named {MIXED!r} is needed, got {mixed}")
        if len(set(self.domains)) != len(self.domains) or not self.domains:
            raise ValueError(f"domains {self.domains} must be non-empty and distinct")
        for d in self.domains:
            if d not in sets or sets[d].kind != "restricted" or sets[d].domain != d:
                raise ValueError(f"domain {d!r} needs a restricted set named {d!r}")
        for k, s in sets.items():
            if s.kind != "mixed" and s.domain not in self.domains:
                raise ValueError(f"set {k!r} belongs to domain {s.domain!r}, which is not in {self.domains}")
            if s.kind == "control" and k != s.domain + CONTROL_SUFFIX:
                raise ValueError(f"control set {k!r} must be named {s.domain + CONTROL_SUFFIX!r}")
        object.__setattr__(self, "sets", sets)
        for c in self.contrasts:
            if not isinstance(c, DomainContrast) or c.label_a not in sets or c.label_b not in sets:
                raise ValueError("contrasts must be DomainContrasts between named sets")
            for side, label in (("a", c.label_a), ("b", c.label_b)):
                s = sets[label]
                if getattr(c, side)["pc1"] != s.pc1 or getattr(c, f"n_{side}") != s.n:
                    raise ValueError(f"contrast {c.label_a}→{c.label_b} disagrees with set {label!r}")
        pairs = [(c.label_a, c.label_b) for c in self.contrasts]
        if len(set(pairs)) != len(pairs):
            raise ValueError(f"duplicate contrasts in {pairs}")
        bal = {str(d): {str(f): float(v) for f, v in b.items()} for d, b in dict(self.balance).items()}
        if not set(bal) <= set(self.domains):
            raise ValueError(f"balance for unknown domains {sorted(set(bal) - set(self.domains))}")
        object.__setattr__(self, "balance", bal)

    # -- lookup ---------------------------------------------------------------------------------
    def get(self, label_a: str, label_b: str) -> DomainContrast | None:
        """The contrast label_b − label_a, or None."""
        return next((c for c in self.contrasts if (c.label_a, c.label_b) == (label_a, label_b)), None)

    def versus_mixed(self, name: str) -> DomainContrast | None:
        return self.get(MIXED, name)

    # -- views ----------------------------------------------------------------------------------
    def order(self) -> list[str]:
        """Set names in display order: mixed, then each domain followed by its control."""
        out = [MIXED]
        for d in self.domains:
            out += [n for n in (d, d + CONTROL_SUFFIX) if n in self.sets]
        return out

    def table(self) -> list[dict[str, Any]]:
        """The Table-1 analogue, one row per set (display order): PC1 and PC1+PC2 in % and PR
        with their intervals, the upper end of the set's null PC1 band, Δ vs mixed per metric
        with its interval and the Bonferroni-adjusted permutation p, mean entropy and length."""
        rows = []
        for name in self.order():
            s = self.sets[name]
            c = self.versus_mixed(name)
            row: dict[str, Any] = {
                "set": name,
                "kind": s.kind,
                "n": s.n,
                "PC1 %": _fmt_ci(s.pc1, 100),
                "PC1+PC2 %": _fmt_ci(s.pc12, 100),
                "PR": _fmt_ci(s.pr),
                "null PC1 % (upper)": f"{100 * s.null.pc1.high:.1f}",
            }
            for m, label, scale, unit in (
                ("pc1", "PC1", 100, " pp"),
                ("pc12", "PC1+PC2", 100, " pp"),
                ("pr", "PR", 1, ""),
            ):
                row[f"Δ{label} vs mixed"] = (
                    "—" if c is None else f"{_fmt_ci(c.diff[m], scale, sign=True)}{unit}, p = {fmt_p(c.p_adjusted[m])}"
                )
            row["mean entropy (bits)"] = f"{s.mean_entropy:.2f}"
            row["mean tokens"] = f"{s.mean_tokens:.1f}"
            rows.append(row)
        return rows
