"""What ``geoprobe compare-domains`` samples and measures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from geoprobe.checks import Limit, check_limits, check_no_bools, check_seed
from geoprobe.errors import GeoprobeError
from geoprobe.sampling import SamplingConfig

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
