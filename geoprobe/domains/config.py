"""What ``geoprobe compare-domains`` samples and measures, and how a recipe's [domains], [sampling] and
[analyses] tables say it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from geoprobe.checks import Limit, check_limits, check_no_bools, check_seed
from geoprobe.errors import GeoprobeError
from geoprobe.sampling import SamplingConfig
from geoprobe.tables import entries, typed

#: the kinds of prompt set a comparison holds; a domain's control set is named "<domain>-control"
KINDS: tuple[str, ...] = ("mixed", "restricted", "control")
SetKind = Literal["mixed", "restricted", "control"]
CONTROL_SUFFIX = "-control"


@dataclass(frozen=True)
class DomainsConfig:
    """What ``compare-domains`` samples and measures."""

    domains: tuple[str, ...] | None = None  # None: every available domain
    layer: int = -1
    sampling: SamplingConfig = SamplingConfig()  # ``candidates`` is the mixed pool size
    domain_candidates: int = 250  # candidate pool of each single domain
    controls: bool = True
    batch_size: int = 16
    n_resamples: int = 1000
    n_permutations: int = 1000
    null_draws: int = 200
    confidence: float = 0.95
    seed: int = 0

    #: upper limits (docs/domains.md)
    LIMITS: ClassVar[dict[str, Limit]] = {
        "n_resamples": Limit.resamples("--n-resamples"),
        "n_permutations": Limit.resamples("--n-permutations"),
        "null_draws": Limit.resamples("analyses.null_draws"),
        "domain_candidates": Limit(
            100_000, "400× the default pool; each candidate costs a forward pass", "--domain-candidates"
        ),
        "batch_size": Limit.batch("--batch-size"),
    }

    def __post_init__(self) -> None:
        check_no_bools(self, "compare-domains")
        check_seed(self.seed, "--seed (seed in a probe recipe)")
        check_limits(self, self.LIMITS)
        if self.domain_candidates < self.sampling.n_prompts:
            raise GeoprobeError(
                f"--domain-candidates {self.domain_candidates} is below the {self.sampling.n_prompts} "
                "prompts sampled per domain; raise --domain-candidates or lower --per-quintile"
            )
        for name in ("n_resamples", "n_permutations", "null_draws"):
            if getattr(self, name) < 10:
                raise GeoprobeError(f"{name} {getattr(self, name)} is below 10; raise it")

    @classmethod
    def from_tables(cls, doc: dict[str, Any], p: Path) -> "DomainsConfig":
        """A compare-domains recipe's [domains], [sampling] and [analyses] tables."""
        top: dict[str, Any] = {}
        sampling: dict[str, Any] = {}
        keys: dict[str, str] = {}
        for section, key, field_name, value in entries(doc, SECTIONS, p):
            keys[field_name.removeprefix("sampling.")] = f"{section}.{key}"
            if field_name.startswith("sampling."):
                sampling[field_name.removeprefix("sampling.")] = value
            elif field_name == "domains":
                top["domains"] = None if value == "all" else value
            else:
                top[field_name] = value
        typed(cls, top, p, keys)
        typed(SamplingConfig, sampling, p, keys)
        if top.get("domains") is not None:
            top["domains"] = tuple(top["domains"])
        from geoprobe.scan.config import sampling_config

        return cls(sampling=sampling_config({**asdict(SamplingConfig()), **sampling}), **top)

    def to_tables(self) -> dict[str, dict[str, Any]]:
        """The recipe tables :meth:`from_tables` reads back as this config."""
        values = {
            **asdict(self),
            "domains": "all" if self.domains is None else list(self.domains),
            **{f"sampling.{k}": v for k, v in asdict(self.sampling).items()},
        }
        return {table: {key: values[f] for key, f in keys.items()} for table, keys in SECTIONS.items()}


SECTIONS = {  # TOML table -> DomainsConfig fields ("sampling." for SamplingConfig fields)
    "domains": {
        "run": "domains",
        "layer": "layer",
        "domain_candidates": "domain_candidates",
        "controls": "controls",
        "batch_size": "batch_size",
    },
    "sampling": {
        "candidates": "sampling.candidates",
        "per_quintile": "sampling.per_stratum",
        "n_strata": "sampling.n_strata",
        "min_tokens": "sampling.min_tokens",
        "max_tokens": "sampling.max_tokens",
        "batch_size": "sampling.batch_size",
    },
    "analyses": {
        "n_resamples": "n_resamples",
        "n_permutations": "n_permutations",
        "null_draws": "null_draws",
        "confidence": "confidence",
        "seed": "seed",
    },
}
