"""``geoprobe intervene``'s configuration (``probes/intervene.toml``'s ``[intervene]`` table) and the
paper's layer choices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from geoprobe.checks import Limit, check_limits, check_no_bools, check_seed
from geoprobe.intervene.axis import InterventionError
from geoprobe.sula.config import DEFAULT_LABELS, SulaConfig
from geoprobe.tables import FlatTables

#: what an intervention does to the axis (geoprobe.intervene.ops): here, so that the config reads without torch
Op = Literal["cut", "only", "shift"]
OPS: tuple[Op, ...] = ("cut", "only", "shift")

#: Pythia-410M (24 layers), the paper's defaults: single layers 12 and 23, and {8, 12, 16, 20, 23} at once
PAPER_SINGLE = (12, 23)
PAPER_MULTI = (8, 12, 16, 20, 23)
PAPER_LAST = 23
CONTROLS_MAX = 1000
SWEEP_MAX = 100  # strengths of one dose–response curve, or experiments of one recipe
DEFAULT_STRENGTHS = {"cut": (0.25, 0.5, 1.0), "only": (1.0,), "shift": (-2.0, 2.0)}


def paper_experiments(n_layers: int) -> tuple[tuple[int, ...], ...]:
    """The paper's layer choices at the same relative depth (layer / 23 of Pythia-410M)."""

    def at(layer: int) -> int:
        return min(n_layers - 1, int(round(layer * (n_layers - 1) / PAPER_LAST)))

    multi = tuple(sorted({at(x) for x in PAPER_MULTI}))
    return tuple(dict.fromkeys([(at(PAPER_SINGLE[0]),), (at(PAPER_SINGLE[1]),), multi]))


@dataclass(frozen=True)
class InterventionConfig(FlatTables):
    """What ``geoprobe intervene`` edits and how it measures the effects."""

    TABLE: ClassVar[str] = "intervene"

    experiments: tuple[tuple[int, ...], ...] | None = None  # None: the paper's layers at the same relative depth
    op: Op = "cut"
    strengths: tuple[float, ...] | None = None  # None: DEFAULT_STRENGTHS[op]
    n_controls: int = 5
    n_per_k: int = 20  # SULA prompts per k (5 values of k: 100 prompts)
    n_texts: int = 8  # held-out encyclopedic passages for the perplexity ratio
    batch_size: int = 16
    n_resamples: int = 1000
    seed: int = 0
    labels: tuple[str, str] = DEFAULT_LABELS  # the SULA label pair (one token each, or scored by the first)
    first_token: bool = False  # multi-token labels: score the first token of each

    #: upper limits (docs/intervene.md): every control, strength and experiment is one more SULA pass
    LIMITS: ClassVar[dict[str, Limit]] = {
        "n_controls": Limit(
            CONTROLS_MAX, "200× the default 5; each control is a SULA pass per strength and experiment", "--controls"
        ),
        "n_per_k": Limit(1000, "4× the paper's 250 prompts per k", "--n-per-k"),
        "n_texts": Limit(1000, "125× the default 8 held-out passages", "intervene.n_texts"),
        "batch_size": Limit.batch("--batch-size"),
        "n_resamples": Limit.resamples("--n-resamples"),
    }

    def __post_init__(self) -> None:
        check_no_bools(self, "intervene")
        check_seed(self.seed, "--seed (seed in a probe recipe)")
        object.__setattr__(self, "labels", tuple(self.labels))
        SulaConfig(labels=self.labels, first_token=self.first_token)  # the same checks as geoprobe sula's
        check_limits(self, self.LIMITS)
        for name, items, flag in (
            ("strengths", self.strengths, "--strength"),
            ("experiments", self.experiments, "--layers"),
        ):
            if items is not None and len(items) > SWEEP_MAX:
                raise InterventionError(
                    f"{len(items)} {name} is above the limit of {SWEEP_MAX} (each is a full sweep of the controls); "
                    f"pass at most {SWEEP_MAX} to {flag} (intervene.{name} in a recipe)"
                )
        if self.op not in DEFAULT_STRENGTHS:
            raise InterventionError(f"operation {self.op!r} is not cut|only|shift; pass --op cut|only|shift")
        if self.n_controls < 1:
            raise InterventionError(f"--controls {self.n_controls} must be at least 1 (random-axis controls)")
        if self.n_per_k < 2:
            raise InterventionError(
                f"--n-per-k {self.n_per_k} is too few SULA prompts to estimate an axis; pass 2 or more"
            )
        for s in self.strengths or ():
            if self.op in ("cut", "only") and not 0.0 <= s <= 1.0:
                raise InterventionError(
                    f"strength {s} of a {self.op} is outside [0, 1]; pass --strength between 0 and 1"
                )
        if self.experiments is not None and (not self.experiments or any(not e for e in self.experiments)):
            raise InterventionError("every experiment needs at least one layer; fix --layers")

    @property
    def strength_list(self) -> tuple[float, ...]:
        return tuple(self.strengths) if self.strengths else DEFAULT_STRENGTHS[self.op]
