"""SULA's configuration: one prompt set and how it is scored (``probes/sula.toml``'s ``[sula]`` table)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from geoprobe.checks import Limit, check_limits, check_no_bools, check_seed
from geoprobe.errors import GeoprobeError
from geoprobe.serial import Record
from geoprobe.tables import FlatTables

DEFAULT_LABELS: tuple[str, str] = ("bip", "pim")
DEFAULT_REMAP_LABELS: tuple[str, str] = ("kel", "pom")
PLACEHOLDER = "item"
CONDITIONS: tuple[str, ...] = ("main", "lexical_remap", "shuffled", "ablated")
#: the least label mass P(L1) + P(L2) at which the two-label entropy is scored (docs/sula.md, "Label mass")
DEFAULT_MIN_LABEL_MASS = 0.01
#: prompts per condition (n_per_k × the values of k): 80× the paper's 250; each condition keeps their final-token
#: values at one layer (a few GB at the limit for the largest models geoprobe loads)
PROMPTS_MAX = 20_000


class SulaError(GeoprobeError):
    """A SULA task that cannot be built as asked (bad config, multi-token labels, k too large)."""


@dataclass(frozen=True)
class SulaConfig(FlatTables, Record):
    """One SULA prompt set. ``n_per_k`` defaults to 50, the authors' released pipeline (the
    paper's text reads both as 250 per k and 250 in all; 50 × 5 values of k = 250 in all). ``layer``:
    where the value geometry is measured (a run setting: results files record it as ``layer``)."""

    TABLE: ClassVar[str] = "sula"

    k_values: tuple[int, ...] = (0, 1, 2, 4, 8)
    n_per_k: int = 50
    agreement: float = 0.9
    labels: tuple[str, str] = DEFAULT_LABELS
    remap_labels: tuple[str, str] = DEFAULT_REMAP_LABELS
    example_format: str = "{word}: {label}"
    separator: str = ", "
    query: str = "test:"
    placeholder: str = PLACEHOLDER
    seed: int = 0
    condition: str = "main"
    first_token: bool = False  # multi-token labels: score the first token of each
    batch_size: int = 16
    n_resamples: int = 1000
    confidence: float = 0.95
    # prompts whose label mass is below this are left out of the calibration metrics, and a condition
    # whose mean label mass is below it is flagged and left out of the headline (docs/sula.md, "Label
    # mass"); None only in files written before the threshold existed (every prompt scored)
    min_label_mass: float | None = field(default=DEFAULT_MIN_LABEL_MASS, metadata={"omit_none": True})
    layer: int = field(default=-1, metadata={"stored": False})  # of the value geometry (default final)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SulaConfig":
        values = cls.field_values(d)
        values.setdefault("min_label_mass", None)  # a file from before the threshold: none was applied
        return cls(**values)

    #: upper limits (docs/sula.md); the prompts per condition are bounded as well (:data:`PROMPTS_MAX`)
    LIMITS: ClassVar[dict[str, Limit]] = {
        "k_values": Limit(1024, "128× the paper's largest k of 8; the model's context is checked when it loads", "--k"),
        "n_per_k": Limit(PROMPTS_MAX, "the limit of prompts per condition", "--n-per-k"),
        "batch_size": Limit.batch("--batch-size"),
        "n_resamples": Limit.resamples("--n-resamples"),
    }

    def __post_init__(self) -> None:
        check_no_bools(self, "sula")
        check_seed(self.seed, "--seed (seed in a probe recipe)")
        object.__setattr__(self, "k_values", tuple(int(k) for k in self.k_values))
        object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "remap_labels", tuple(self.remap_labels))
        check_limits(self, self.LIMITS)
        if not self.k_values:
            raise SulaError("no values of k given; pass --k with at least one value, e.g. 0,1,2,4,8")
        for k in self.k_values:
            if k < 0:
                raise SulaError(f"k = {k} in k_values is negative; the number of examples must be >= 0 (fix --k)")
        if len(set(self.k_values)) != len(self.k_values):
            raise SulaError(f"k_values {self.k_values} repeat a value; pass each k once (--k)")
        if self.n_per_k < 1:
            raise SulaError(f"n_per_k = {self.n_per_k} prompts per k must be at least 1; pass --n-per-k 1 or more")
        check_prompt_count(self.n_per_k, len(self.k_values), "--n-per-k", "--k")
        if not 0.5 < self.agreement < 1.0:
            raise SulaError(
                f"agreement = {self.agreement} must lie strictly between 0.5 and 1 "
                "(label–class agreement probability); fix --agreement"
            )
        for name in ("labels", "remap_labels"):
            pair = getattr(self, name)
            if len(pair) != 2 or pair[0] == pair[1] or not all(isinstance(x, str) and x.strip() for x in pair):
                raise SulaError(f"{name} {pair!r} must be two different non-empty words; fix --labels")
        if "{word}" not in self.example_format or "{label}" not in self.example_format:
            raise SulaError(f"example format {self.example_format!r} must contain {{word}} and {{label}}")
        if not self.query.strip():
            raise SulaError("the query text is empty; pass a query such as 'test:'")
        if self.condition not in CONDITIONS:
            raise SulaError(f"condition {self.condition!r} is not one of {', '.join(CONDITIONS)}")
        if self.batch_size < 1:
            raise SulaError(f"batch size {self.batch_size} must be at least 1; pass --batch-size 1 or more")
        if self.n_resamples < 2:
            raise SulaError(f"n_resamples = {self.n_resamples} bootstrap resamples must be at least 2")
        if not 0.0 < self.confidence < 1.0:
            raise SulaError(f"confidence {self.confidence} must be in (0, 1)")
        m = self.min_label_mass
        if m is not None and (isinstance(m, bool) or not isinstance(m, (int, float)) or not 0.0 <= m < 1.0):
            raise SulaError(
                f"min_label_mass = {m!r} must be at least 0 and below 1 (a share of the next-token probability); "
                f"fix --min-label-mass (default {DEFAULT_MIN_LABEL_MASS}; 0 scores every prompt)"
            )

    @property
    def n_prompts(self) -> int:
        """Prompts per condition."""
        return self.n_per_k * len(self.k_values)

    @property
    def label_lead(self) -> str:
        """The text between the separator before the label and the label (``" "`` by default)."""
        before = self.example_format.split("{label}")[0]
        return before[len(before.rstrip()) :]

    def labels_for(self, condition: str | None = None) -> tuple[str, str]:
        return self.remap_labels if (condition or self.condition) == "lexical_remap" else self.labels


def check_prompt_count(n_per_k: int, n_k: int, per_k_flag: str, k_flag: str) -> None:
    """``n_per_k`` prompts for each of ``n_k`` values of k stay within :data:`PROMPTS_MAX`, or a one-line
    error naming the largest ``per_k_flag`` that fits."""
    if n_per_k * n_k > PROMPTS_MAX:
        raise SulaError(
            f"{per_k_flag} {n_per_k} × {n_k} values of k = {n_per_k * n_k} prompts per condition, above the limit "
            f"of {PROMPTS_MAX} (80× the paper's 250); pass {per_k_flag} {PROMPTS_MAX // n_k} or less (or fewer "
            f"values to {k_flag})"
        )
