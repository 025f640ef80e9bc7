"""The positional results: per-head prior fits, distance profiles and stability over lengths of a
pretrained model (:class:`PositionalResult`), and a wind-tunnel transformer's error against sequence
length (:class:`TunnelLengthCurve`); persistence, pages and figures."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from jaxtyping import Float

from geoprobe.analysis.stats import Estimate
from geoprobe.positional.heads import CLASSES, HeadPrior
from geoprobe.positional.stability import Stability, critical_length
from geoprobe.report.page import Page
from geoprobe.results import Result
from geoprobe.serial import encode
from geoprobe.windtunnel.evaluate import TunnelMetrics


@dataclass(frozen=True, eq=False)
class PositionalResult(Result, Page):
    """What ``geoprobe positional`` measured on one model."""

    KIND: ClassVar[str] = "geoprobe.positional"
    FILE: ClassVar[str] = "positional.json"
    PAGE: ClassVar[str | None] = "positional.html"
    WHAT: ClassVar[str] = "positional results file"
    FIX: ClassVar[str] = "pass the positional.json that 'geoprobe positional' wrote"

    model: str
    layers: tuple[int, ...]
    n_heads: int
    fit_length: int
    max_distance: int
    exclude_first: int
    n_prompts: int
    n_resamples: int
    heads: tuple[HeadPrior, ...]
    profiles: Float[np.ndarray, "L H Dp1"]
    rope: tuple[float, int] | None  # (rope_theta, rotary_dim)
    stability: Stability | None
    config: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(int(x) for x in self.layers))
        prof = np.asarray(self.profiles, dtype=np.float64)
        L = len(self.layers)
        if prof.shape != (L, self.n_heads, self.max_distance + 1):
            raise ValueError(f"profiles {prof.shape}, expected ({L}, {self.n_heads}, {self.max_distance + 1})")
        if not np.allclose(prof.sum(-1), 1.0, atol=1e-6) or (prof < 0).any():
            raise ValueError("every profile must be a distribution over the distance window")
        prof.setflags(write=False)
        object.__setattr__(self, "profiles", prof)
        if [(h.layer, h.head) for h in self.heads] != [(x, h) for x in self.layers for h in range(self.n_heads)]:
            raise ValueError("heads must list every (layer, head) once, layer-major")
        if self.fit_length < self.max_distance + 1 + self.exclude_first:
            raise ValueError(
                f"fit length {self.fit_length} cannot hold distances 0..{self.max_distance} "
                f"after excluding {self.exclude_first} first token(s)"
            )
        if self.rope is not None:
            object.__setattr__(self, "rope", (float(self.rope[0]), int(self.rope[1])))

    # -- summaries ---------------------------------------------------------------------------
    def head(self, layer: int, h: int) -> HeadPrior:
        return self.heads[self.layers.index(layer) * self.n_heads + h]

    def class_counts(self) -> dict[str, int]:
        c = Counter(h.head_class for h in self.heads)
        return {k: c.get(k, 0) for k in CLASSES}

    def class_counts_by_layer(self) -> dict[int, dict[str, int]]:
        return {
            x: {k: sum(1 for h in self.heads if h.layer == x and h.head_class == k) for k in CLASSES}
            for x in self.layers
        }

    def beta_summary(self) -> dict[str, Any]:
        """Quantiles of β̂ over converged heads that are not sink-dominated, flat or local."""
        b = np.array([h.beta.value for h in self.heads if h.head_class in ("ALiBi-like", "Gaussian-like") and h.beta])
        if b.size == 0:
            return {"n": 0}
        q = np.quantile(b, [0.1, 0.25, 0.5, 0.75, 0.9])
        return {
            "n": int(b.size),
            "q10": q[0],
            "q25": q[1],
            "median": q[2],
            "q75": q[3],
            "q90": q[4],
            "min": float(b.min()),
            "max": float(b.max()),
        }

    def rows(self) -> list[dict[str, str]]:
        """One table row per head (the report's and the CLI's)."""

        def est(e: Estimate | None) -> str:
            return "—" if e is None else f"{e:.2f}"

        out = []
        for h in self.heads:
            best = min(h.kl_ref, key=lambda k: h.kl_ref[k])
            out.append(
                {
                    "layer": str(h.layer),
                    "head": str(h.head),
                    "class": h.head_class + (" (?)" if h.ambiguous else ""),
                    "sink mass": f"{h.sink_mass:.2f}",
                    "μ": est(h.mu),
                    "σ": est(h.sigma),
                    "β": est(h.beta),
                    "KL fit (bits)": "—" if h.fit_kl is None else f"{h.fit_kl:.3f}",
                    "nearest reference": f"{best} ({h.kl_ref[best]:.3f})",
                    "note": h.reason,
                }
            )
        return out

    # -- persistence -------------------------------------------------------------------------
    def body(self) -> dict[str, Any]:  # stored shape differs: class counts and the β summary (derived) follow heads
        d = super().body()
        keys = list(d)
        i = keys.index("heads") + 1
        derived = {"class_counts": self.class_counts(), "beta_summary": encode(self.beta_summary())}
        return {**{k: d[k] for k in keys[:i]}, **derived, **{k: d[k] for k in keys[i:]}}


@dataclass(frozen=True, eq=False)
class TunnelLengthCurve(Result, Page):
    """Error vs sequence length of one trained wind-tunnel transformer."""

    KIND: ClassVar[str] = "geoprobe.positional.windtunnel"
    FILE: ClassVar[str] = "positional.json"
    PAGE: ClassVar[str | None] = "positional.html"
    WHAT: ClassVar[str] = "positional wind-tunnel results file"
    FIX: ClassVar[str] = "pass the positional.json that 'geoprobe positional --windtunnel RUN_DIR' wrote"

    run_dir: str
    task: dict[str, Any]
    train_K: int
    metrics: tuple[TunnelMetrics, ...]
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Ks = [m.K for m in self.metrics]
        if not Ks or Ks != sorted(set(Ks)):
            raise ValueError(f"lengths {Ks} must be non-empty, increasing and distinct")
        if self.train_K < 1:
            raise ValueError(f"training length {self.train_K} must be positive")

    @property
    def lengths(self) -> tuple[int, ...]:
        return tuple(m.K for m in self.metrics)

    @property
    def critical_length(self) -> int | None:
        base = next((m for m in self.metrics if m.K == self.train_K), self.metrics[0])
        beyond = [base, *(m for m in self.metrics if m.K > base.K)]
        return critical_length([m.K for m in beyond], [m.mae_sample for m in beyond], worse="higher")

    # -- persistence -------------------------------------------------------------------------
    def body(self) -> dict[str, Any]:  # stored shape differs: the critical length (derived) follows the metrics
        d = super().body()
        provenance = d.pop("provenance")
        return {**d, "critical_length": self.critical_length, "provenance": provenance}
