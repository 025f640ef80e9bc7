"""What a scan measures: :class:`ScanConfig` (the defaults of ``probes/scan.toml``).

Probe recipes (``probes/*.toml``) are read by :func:`geoprobe.recipes.load_probe`, which turns a
scan recipe's tables into this config; command-line flags override what it sets.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, ClassVar, Literal

from geoprobe.capture.run import DEFAULT_MAX_TOKENS
from geoprobe.checks import Limit, check_limits, check_no_bools, check_seed
from geoprobe.errors import GeoprobeError
from geoprobe.sampling import SamplingConfig
from geoprobe.serial import Record

Analysis = Literal["manifold", "alignment", "orthogonality", "focusing"]
ANALYSES: tuple[Analysis, ...] = ("manifold", "alignment", "orthogonality", "focusing")
MIN_PROMPTS = 10  # PCA needs n >= 3 for PC1+PC2; bootstrap CIs and permutation tests need ~10


class ProbeError(GeoprobeError):
    """A probe recipe that cannot be used."""


_FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "an integer"),
    "int | None": ((int, type(None)), "an integer"),
    "float": ((int, float), "a number"),
    "bool": ((bool,), "true or false"),
    "str": ((str,), "a string"),
}


@dataclass(frozen=True, eq=False)
class ScanConfig(Record):
    """What a scan measures. Defaults are `probes/scan.toml`'s."""

    prompts: str = "mixed"  # a corpus set (mixed or a domain: geoprobe prompts), "builtin", or a prompt file path
    layers: tuple[int, ...] | None = None  # None: every layer; negative counts from the end
    batch_size: int = 16
    max_tokens: int | None = DEFAULT_MAX_TOKENS  # prompt tokens kept (the final ones); None: the context window
    analyses: tuple[Analysis, ...] = ANALYSES
    scatter_layers: tuple[int, ...] = ()  # value-manifold scatter plots; the final layer is always shown
    n_resamples: int = 1000  # bootstrap resamples for means and correlations
    pca_resamples: int = 200  # bootstrap resamples for PCA spectra
    null_draws: int = 200  # matched-null draws (per layer for "permute"; per distinct d for "gaussian")
    null_kind: Literal["permute", "gaussian"] = "gaussian"
    ci_layers: Literal["final", "all"] = "final"  # bootstrap CIs of PCA/correlations: final + scatter layers, or all
    n_permutations: int = 1000
    confidence: float = 0.95
    init_baseline: bool = True  # key orthogonality of the architecture's own random init
    seed: int = 0  # seeds the prompt sampling and every resampling
    sampling: SamplingConfig = SamplingConfig()  # how corpus sets are drawn (stratified by next-token entropy)

    #: upper limits (docs/outputs.md): resampling counts, and a forward batch (memory is estimated too)
    LIMITS: ClassVar[dict[str, Limit]] = {
        **{
            name: Limit.resamples(f"analyses.{name}")
            for name in ("n_resamples", "pca_resamples", "null_draws", "n_permutations")
        },
        "batch_size": Limit.batch("--batch-size"),
    }

    def __post_init__(self) -> None:
        check_no_bools(self, "scan")
        check_seed(self.seed, "--seed (seed in a probe recipe)")
        if isinstance(self.sampling, dict):
            object.__setattr__(self, "sampling", sampling_config(self.sampling))
        for f in fields(self):  # a recipe can hold any TOML type: say which setting, before a comparison fails
            want, v = _FIELD_TYPES.get(str(f.type)), getattr(self, f.name)
            if want is not None and (not isinstance(v, want[0]) or (isinstance(v, bool) and bool not in want[0])):
                raise ProbeError(
                    f"scan setting {f.name} = {v!r} is not {want[1]}; fix it in the probe recipe "
                    "(or pass the matching flag)"
                )
        bad = [a for a in self.analyses if a not in ANALYSES]
        if bad:
            raise ProbeError(f"analysis {bad[0]!r} is unknown; choose from {', '.join(ANALYSES)}")
        if "alignment" in self.analyses and "manifold" not in self.analyses:
            raise ProbeError(
                "analysis 'alignment' needs 'manifold' (it correlates PC1 with entropy); add it to analyses"
            )
        if self.batch_size < 1:
            raise ProbeError(f"batch size {self.batch_size} must be at least 1; pass --batch-size 1 or more")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ProbeError(
                f"max tokens {self.max_tokens} must be at least 1; pass --max-tokens 1 or more "
                f"(default {DEFAULT_MAX_TOKENS}; max_tokens in a probe's [capture])"
            )
        if not 0.5 <= self.confidence < 1:
            raise ProbeError(f"confidence {self.confidence} must be in [0.5, 1); set confidence in the probe")
        for name in ("n_resamples", "pca_resamples", "null_draws", "n_permutations"):
            if getattr(self, name) < 10:
                raise ProbeError(f"{name} {getattr(self, name)} is below 10; set {name} >= 10 in the probe")
        check_limits(self, self.LIMITS)
        if self.null_kind not in ("permute", "gaussian"):
            raise ProbeError(
                f"null kind {self.null_kind!r} is not gaussian|permute; pass --null gaussian|permute "
                "(null_kind in a probe)"
            )
        if self.ci_layers not in ("final", "all"):
            raise ProbeError(
                f"ci layers {self.ci_layers!r} is not final|all; pass --ci-layers final|all (ci_layers in a probe)"
            )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ScanConfig":
        """Field-driven, but an unknown key is a ProbeError naming it (a recipe's settings come here)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ProbeError(f"unknown scan setting {unknown[0]!r}; known: {', '.join(sorted(known))}")
        return cls(**cls.field_values(d))

    def updated(self, **changes: Any) -> "ScanConfig":
        """A copy with the given settings changed (``None`` leaves a setting as it is)."""
        changes = {k: v for k, v in changes.items() if v is not None}
        if isinstance(changes.get("sampling"), dict):  # partial sampling changes merge into the current ones
            sampling = {k: v for k, v in changes["sampling"].items() if v is not None}
            changes["sampling"] = sampling_config({**asdict(self.sampling), **sampling})
        return replace(self, **changes)


_SAMPLING_FIELDS = {f.name for f in fields(SamplingConfig)}


def sampling_config(d: dict[str, Any]) -> SamplingConfig:
    """A SamplingConfig from a dict of its fields; an unknown key is a ProbeError naming it."""
    unknown = sorted(set(d) - _SAMPLING_FIELDS)
    if unknown:
        raise ProbeError(f"unknown sampling setting {unknown[0]!r}; known: {', '.join(sorted(_SAMPLING_FIELDS))}")
    return SamplingConfig(**d)
