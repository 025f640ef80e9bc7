"""What a scan measures: :class:`ScanConfig` (the defaults of ``probes/scan.toml``), and how a scan
recipe's tables ([prompts], [capture], [analyses], [figures], [sampling]) become one and back.

Probe recipes (``probes/*.toml``) are read by :func:`geoprobe.recipes.load_probe`, which hands a
scan recipe's tables to :meth:`ScanConfig.from_tables`; command-line flags override what it sets.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

from geoprobe.capture.defaults import DEFAULT_MAX_TOKENS
from geoprobe.checks import Limit, check_limits, check_no_bools, check_seed
from geoprobe.errors import ProbeError
from geoprobe.sampling import SamplingConfig, is_corpus_set
from geoprobe.scan.metrics import METRICS
from geoprobe.serial import Record
from geoprobe.tables import entries, typed

#: the analyses a scan can run: the registered metrics (geoprobe.scan.metrics), in the order they run
ANALYSES: tuple[str, ...] = tuple(METRICS)
Analysis = Literal[ANALYSES]  # type: ignore[valid-type]
MIN_PROMPTS = 10  # PCA needs n >= 3 for PC1+PC2; bootstrap CIs and permutation tests need ~10


_FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "an integer"),
    "int | None": ((int, type(None)), "an integer"),
    "float": ((int, float), "a number"),
    "bool": ((bool,), "true or false"),
    "str": ((str,), "a string"),
    "str | None": ((str, type(None)), "a string"),
}
#: a setting added after 0.1.0: not written while it holds its default, so older files re-encode as read
_NEW = {"omit_default": True}
#: the most random-init draws of the scorecard's null
MAX_INIT_DRAWS = 20


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
    #: the scorecard's null: random-init draws of the architecture on the same prompts (geoprobe.scan.nulls)
    init_draws: int = field(default=3, metadata=_NEW)
    #: the model's own initialisation (a step-0 checkpoint) as the null instead (None: found or drawn)
    baseline: str | None = field(default=None, metadata=_NEW)
    #: what capture keeps of the final token's attention: its entropy, or also the distribution (capture/)
    attention: Literal["entropy", "distribution"] = field(default="entropy", metadata=_NEW)

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
        for name in self.analyses:
            for need in METRICS[name].needs:
                if need not in self.analyses:
                    why = f" ({METRICS[name].why})" if METRICS[name].why else ""
                    raise ProbeError(f"analysis {name!r} needs {need!r}{why}; add it to analyses")
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
        if not 0 <= self.init_draws <= MAX_INIT_DRAWS:
            raise ProbeError(
                f"init draws {self.init_draws} outside 0..{MAX_INIT_DRAWS}; pass --init-draws 0 to "
                f"{MAX_INIT_DRAWS} (init_draws in a probe's [analyses]; 0: no random-init null, nothing passes)"
            )
        if self.attention not in ("entropy", "distribution"):
            raise ProbeError(
                f"attention {self.attention!r} is not entropy|distribution; set attention in a probe's [capture]"
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

    @classmethod
    def from_tables(cls, doc: dict[str, Any], p: Path) -> "ScanConfig":
        """A scan recipe's [prompts], [capture], [analyses], [figures], [sampling] tables."""
        return scan_tables(doc, p, cls)

    def to_tables(self, prompts: bool = True) -> dict[str, dict[str, Any]]:
        """The recipe tables :meth:`from_tables` reads back as this config (without [prompts]: a
        compare-models recipe samples its own)."""
        from geoprobe.prompts import prompt_source_kind

        if self.max_tokens is None:
            raise ProbeError("max_tokens = None (the context window) cannot be written to a recipe; set it in Python")
        tables: dict[str, dict[str, Any]] = {}
        if prompts:
            key = "file" if prompt_source_kind(self.prompts) == "file" else "set"
            tables["prompts"] = {key: str(Path(self.prompts).resolve()) if key == "file" else self.prompts}
        values = {
            **{f.name: getattr(self, f.name) for f in fields(self)},
            **self.to_dict(),
            "layers": "all" if self.layers is None else list(self.layers),
            **{k: getattr(self.sampling, _RENAMED.get(k, k)) for k in _SAMPLING_KEYS},
        }
        for table in ("capture", "analyses", "figures", "sampling"):
            tables[table] = {key: values[f] for key, f in SECTIONS[table].items() if values[f] is not None}
        return tables

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


# -- recipe tables -------------------------------------------------------------------------------------
SECTIONS = {  # TOML table -> the ScanConfig fields it may set
    "prompts": {"set": "prompts", "file": "prompts"},
    "capture": {"layers": "layers", "batch_size": "batch_size", "max_tokens": "max_tokens", "attention": "attention"},
    "analyses": {
        "run": "analyses",
        "n_resamples": "n_resamples",
        "pca_resamples": "pca_resamples",
        "null_draws": "null_draws",
        "null_kind": "null_kind",
        "n_permutations": "n_permutations",
        "confidence": "confidence",
        "init_baseline": "init_baseline",
        "init_draws": "init_draws",
        "baseline": "baseline",
        "seed": "seed",
        "ci_layers": "ci_layers",
    },
    "figures": {"scatter_layers": "scatter_layers"},
    "sampling": {
        "candidates": "candidates",
        "per_quintile": "per_stratum",
        "n_strata": "n_strata",
        "min_tokens": "min_tokens",
        "max_tokens": "max_prompt_tokens",
        "batch_size": "sampling_batch_size",
    },
}
_RENAMED = {"max_prompt_tokens": "max_tokens", "sampling_batch_size": "batch_size"}
_SAMPLING_KEYS = ("candidates", "per_stratum", "n_strata", "min_tokens", "max_prompt_tokens", "sampling_batch_size")


def _is_set(name: str) -> bool:
    return name == "builtin" or is_corpus_set(name)


def scan_tables(doc: dict[str, Any], p: Path, cls: type = ScanConfig) -> Any:
    """A scan recipe's [prompts], [capture], [analyses], [figures], [sampling] tables as ``cls``."""
    prompts = doc.get("prompts")
    if isinstance(prompts, dict) and {"set", "file"} <= prompts.keys():
        raise ProbeError(f"probe {str(p)!r}: [prompts] has both set and file; keep one of them")
    settings: dict[str, Any] = {}
    keys: dict[str, str] = {}
    for section, key, field_name, value in entries(doc, SECTIONS, p):
        keys[field_name] = f"{section}.{key}"
        if section == "prompts" and key == "file" and isinstance(value, str):
            value = str((p.parent / value).resolve()) if not Path(value).is_absolute() else value
        if section == "prompts" and key == "set" and isinstance(value, str) and not _is_set(value):
            raise ProbeError(
                f"probe {str(p)!r}: prompts.set = {value!r} is not a prompt set (builtin, mixed or a domain: "
                "geoprobe prompts lists them); name a prompt file with [prompts] file = ..., which is read "
                "relative to the recipe"
            )
        if key == "layers" and value == "all":
            value = None
        settings[field_name] = value
    sampling = {_RENAMED.get(k, k): settings.pop(k) for k in list(settings) if k in _SAMPLING_KEYS}
    typed(cls, settings, p, keys)
    typed(SamplingConfig, sampling, p, {_RENAMED.get(k, k): v for k, v in keys.items()})
    if sampling:
        settings["sampling"] = sampling
    return cls.from_dict(settings)
