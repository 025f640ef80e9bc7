"""Scan configuration and probe recipes (``probes/*.toml``).

A probe recipe is a small declarative TOML file holding an experiment's defaults; the CLI
(``geoprobe run probes/scan.toml --model M``) and notebooks load it with :func:`load_probe`,
and command-line flags override what it sets.
"""
from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

from geoprobe.capture.run import DEFAULT_MAX_TOKENS
from geoprobe.checks import check_seed
from geoprobe.errors import GeoprobeError
from geoprobe.sampling import SamplingConfig

Analysis = Literal["manifold", "alignment", "orthogonality", "focusing"]
ANALYSES: tuple[Analysis, ...] = ("manifold", "alignment", "orthogonality", "focusing")
MIN_PROMPTS = 10  # PCA needs n >= 3 for PC1+PC2; bootstrap CIs and permutation tests need ~10


class ProbeError(GeoprobeError):
    """A probe recipe that cannot be used."""


_FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "an integer"), "int | None": ((int, type(None)), "an integer"),
    "float": ((int, float), "a number"), "bool": ((bool,), "true or false"), "str": ((str,), "a string"),
}


@dataclass(frozen=True)
class ScanConfig:
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

    def __post_init__(self) -> None:
        check_seed(self.seed, "--seed (seed in a probe recipe)")
        if isinstance(self.sampling, dict):
            object.__setattr__(self, "sampling", _sampling(self.sampling))
        for f in fields(self):  # a recipe can hold any TOML type: say which setting, before a comparison fails
            want, v = _FIELD_TYPES.get(str(f.type)), getattr(self, f.name)
            if want is not None and (not isinstance(v, want[0]) or (isinstance(v, bool) and bool not in want[0])):
                raise ProbeError(f"scan setting {f.name} = {v!r} is not {want[1]}; fix it in the probe recipe "
                                 "(or pass the matching flag)")
        bad = [a for a in self.analyses if a not in ANALYSES]
        if bad:
            raise ProbeError(f"analysis {bad[0]!r} is unknown; choose from {', '.join(ANALYSES)}")
        if "alignment" in self.analyses and "manifold" not in self.analyses:
            raise ProbeError("analysis 'alignment' needs 'manifold' (it correlates PC1 with entropy); add it to analyses")
        if self.batch_size < 1:
            raise ProbeError(f"batch size {self.batch_size} must be at least 1; pass --batch-size 1 or more")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ProbeError(f"max tokens {self.max_tokens} must be at least 1; pass --max-tokens 1 or more "
                             f"(default {DEFAULT_MAX_TOKENS}; max_tokens in a probe's [capture])")
        if not 0.5 <= self.confidence < 1:
            raise ProbeError(f"confidence {self.confidence} must be in [0.5, 1); set confidence in the probe")
        for name in ("n_resamples", "pca_resamples", "null_draws", "n_permutations"):
            if getattr(self, name) < 10:
                raise ProbeError(f"{name} {getattr(self, name)} is below 10; set {name} >= 10 in the probe")
        if self.null_kind not in ("permute", "gaussian"):
            raise ProbeError(f"null kind {self.null_kind!r} is not gaussian|permute; pass --null gaussian|permute "
                             "(null_kind in a probe)")
        if self.ci_layers not in ("final", "all"):
            raise ProbeError(f"ci layers {self.ci_layers!r} is not final|all; pass --ci-layers final|all "
                             "(ci_layers in a probe)")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("layers", "analyses", "scatter_layers"):
            d[k] = None if d[k] is None else list(d[k])
        return d  # asdict already turned ``sampling`` into a dict

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ScanConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ProbeError(f"unknown scan setting {unknown[0]!r}; known: {', '.join(sorted(known))}")
        d = dict(d)
        for k in ("layers", "analyses", "scatter_layers"):
            if d.get(k) is not None:
                d[k] = tuple(d[k])
        return cls(**d)

    def updated(self, **changes: Any) -> "ScanConfig":
        """A copy with the given settings changed (``None`` leaves a setting as it is)."""
        changes = {k: v for k, v in changes.items() if v is not None}
        if isinstance(changes.get("sampling"), dict):  # partial sampling changes merge into the current ones
            sampling = {k: v for k, v in changes["sampling"].items() if v is not None}
            changes["sampling"] = _sampling({**asdict(self.sampling), **sampling})
        return replace(self, **changes)


_SAMPLING_FIELDS = {f.name for f in fields(SamplingConfig)}


def _sampling(d: dict[str, Any]) -> SamplingConfig:
    unknown = sorted(set(d) - _SAMPLING_FIELDS)
    if unknown:
        raise ProbeError(f"unknown sampling setting {unknown[0]!r}; known: {', '.join(sorted(_SAMPLING_FIELDS))}")
    return SamplingConfig(**d)


@dataclass(frozen=True)
class Probe:
    name: str
    command: str
    description: str
    config: ScanConfig
    path: str


_SECTIONS = {  # TOML table -> the ScanConfig fields it may set
    "prompts": {"set": "prompts", "file": "prompts"},
    "capture": {"layers": "layers", "batch_size": "batch_size", "max_tokens": "max_tokens"},
    "analyses": {"run": "analyses", "n_resamples": "n_resamples", "pca_resamples": "pca_resamples",
                 "null_draws": "null_draws", "null_kind": "null_kind", "n_permutations": "n_permutations",
                 "confidence": "confidence", "init_baseline": "init_baseline", "seed": "seed",
                 "ci_layers": "ci_layers"},
    "figures": {"scatter_layers": "scatter_layers"},
    "sampling": {"candidates": "candidates", "per_quintile": "per_stratum", "n_strata": "n_strata",
                 "min_tokens": "min_tokens", "max_tokens": "max_prompt_tokens", "batch_size": "sampling_batch_size"},
}


def load_probe(path: str | Path) -> Probe:
    """Read a probe recipe; every unknown key is an error naming the file and the key."""
    p = Path(path)
    if not p.is_file():
        raise ProbeError(f"probe file {str(p)!r} does not exist; pass a recipe such as probes/scan.toml")
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProbeError(f"probe file {str(p)!r} is not valid UTF-8 TOML: {exc}") from None
    head = doc.pop("probe", None)
    if not isinstance(head, dict) or "command" not in head:
        raise ProbeError(f"probe {str(p)!r} has no [probe] table naming its command; add [probe] with command = "
                         f"\"scan\" (or one of {', '.join(COMMANDS[1:])}) — geoprobe does not guess what to run")
    command = head["command"]
    if command not in COMMANDS:
        raise ProbeError(f"probe {str(p)!r} runs command {command!r}; this geoprobe runs: {', '.join(COMMANDS)}")
    unknown = sorted(set(head) - {"name", "command", "description"})
    if unknown:
        raise ProbeError(f"probe {str(p)!r}: unknown key probe.{unknown[0]}; known: name, command, description")
    try:
        if command in ("sula", "intervene", "windtunnel", "denoise", "positional"):
            config: Any = _flat_config(command, doc, p)
        elif command == "compare-domains":
            config = _domains_config(doc, p)
        elif command == "compare-models":
            config = _models_config(doc.pop("models", None), _scan_config(doc, p), p)
        else:
            config = _scan_config(doc, p)
    except (TypeError, AttributeError) as exc:  # a value of the wrong TOML type reached a comparison
        raise ProbeError(f"probe {str(p)!r}: a setting has the wrong type ({exc}); fix it in the recipe") from None
    return Probe(name=head.get("name", p.stem), command=command, description=head.get("description", ""),
                 config=config, path=str(p))


def _entries(doc: dict[str, Any], sections: dict[str, dict[str, str]], p: Path) -> Any:
    """(section, key, field, value) of every recipe entry; an unknown section or key is a
    one-line ProbeError naming the file and what is known."""
    for section, table in doc.items():
        allowed = sections.get(section)
        if allowed is None or not isinstance(table, dict):
            raise ProbeError(f"probe {str(p)!r}: unknown section [{section}]; known: {', '.join(sections)}")
        for key, value in table.items():
            if key not in allowed:
                raise ProbeError(f"probe {str(p)!r}: unknown key {section}.{key}; known: {', '.join(allowed)}")
            yield section, key, allowed[key], value


def _typed(cls: type, values: dict[str, Any], p: Path, keys: dict[str, str]) -> None:
    """Each recipe value fits its config field's type, or a one-line ProbeError naming ``section.key``."""
    from geoprobe.checks import check_fields

    try:
        check_fields(cls, values, lambda f: f"probe {str(p)!r}: {keys.get(f, f)}")
    except GeoprobeError as exc:
        raise ProbeError(f"{exc}; fix it in the recipe") from None


def _scan_config(doc: dict[str, Any], p: Path) -> ScanConfig:
    prompts = doc.get("prompts")
    if isinstance(prompts, dict) and {"set", "file"} <= prompts.keys():
        raise ProbeError(f"probe {str(p)!r}: [prompts] has both set and file; keep one of them")
    settings: dict[str, Any] = {}
    keys: dict[str, str] = {}
    for section, key, field_name, value in _entries(doc, _SECTIONS, p):
        keys[field_name] = f"{section}.{key}"
        if section == "prompts" and key == "file":
            value = str((p.parent / value).resolve()) if not Path(value).is_absolute() else value
        if key == "layers" and value == "all":
            value = None
        settings[field_name] = value
    sampling = {_RENAMED.get(k, k): settings.pop(k) for k in list(settings)
                if k in ("candidates", "per_stratum", "n_strata", "min_tokens", "max_prompt_tokens", "sampling_batch_size")}
    _typed(ScanConfig, settings, p, keys)
    _typed(SamplingConfig, sampling, p, {_RENAMED.get(k, k): v for k, v in keys.items()})
    if sampling:
        settings["sampling"] = sampling
    return ScanConfig.from_dict(settings)


COMMANDS = ("scan", "compare-domains", "compare-models", "sula", "intervene", "windtunnel", "denoise", "positional")


def _flat_config(command: str, doc: dict[str, Any], p: Path) -> Any:
    """A sula, intervene, windtunnel, denoise or positional recipe: every key of its tables is a field of
    SulaConfig, InterventionConfig, WindTunnelConfig, DenoiseConfig or PositionalConfig (the ``[<command>]``
    table; ``[analyses]`` for n_resamples and seed)."""
    from dataclasses import fields as dc_fields

    if command == "sula":
        from geoprobe.sula.config import SulaConfig as cls
    elif command == "windtunnel":
        from geoprobe.windtunnel.run import WindTunnelConfig as cls
    elif command == "denoise":
        from geoprobe.denoise.run import DenoiseConfig as cls
    elif command == "positional":
        from geoprobe.positional.config import PositionalConfig as cls
    else:
        from geoprobe.intervene.config import InterventionConfig as cls
    known = {f.name for f in dc_fields(cls)}
    values: dict[str, Any] = {}
    keys: dict[str, str] = {}
    for section, table in doc.items():
        if section not in (command, "analyses") or not isinstance(table, dict):
            raise ProbeError(f"probe {str(p)!r}: unknown section [{section}]; known: {command}, analyses")
        for key, value in table.items():
            if key not in known:
                raise ProbeError(f"probe {str(p)!r}: unknown key {section}.{key}; known: {', '.join(sorted(known))}")
            keys[key] = f"{section}.{key}"
            values[key] = tuple(tuple(v) if isinstance(v, list) else v for v in value) if isinstance(value, list) else value
    _typed(cls, values, p, keys)
    return cls(**values)


@dataclass(frozen=True)
class CompareModelsConfig:
    """``geoprobe run probes/compare.toml``: sample each prompt set once (with ``sample_with``),
    scan every model on exactly those prompts, then ``geoprobe compare`` the runs."""

    models: tuple[str, ...]
    sets: tuple[str, ...] = ("mixed",)
    sample_with: str | None = None  # None: the first model
    scan: ScanConfig = ScanConfig()

    def __post_init__(self) -> None:
        if len(self.models) < 2 or len(set(self.models)) != len(self.models):
            raise ProbeError(f"models {list(self.models)}: compare-models needs at least two distinct models "
                             "([models] run = [...])")
        if not self.sets:
            raise ProbeError("compare-models needs at least one prompt set ([models] sets = [\"mixed\", ...])")

    @property
    def sampler(self) -> str:
        return self.sample_with or self.models[0]


def _models_config(table: Any, scan: ScanConfig, p: Path) -> CompareModelsConfig:
    if not isinstance(table, dict) or "run" not in table:
        raise ProbeError(f"probe {str(p)!r} runs compare-models but has no [models] run = [...] list")
    unknown = sorted(set(table) - {"run", "sets", "sample_with"})
    if unknown:
        raise ProbeError(f"probe {str(p)!r}: unknown key models.{unknown[0]}; known: run, sets, sample_with")
    _typed(CompareModelsConfig, {"models": table["run"], **{k: table[k] for k in ("sets", "sample_with") if k in table}},
           p, {"models": "models.run", "sets": "models.sets", "sample_with": "models.sample_with"})
    return CompareModelsConfig(models=tuple(table["run"]), sets=tuple(table.get("sets", ("mixed",))),
                               sample_with=table.get("sample_with"), scan=scan)


_RENAMED = {"max_prompt_tokens": "max_tokens", "sampling_batch_size": "batch_size"}

_DOMAIN_SECTIONS = {  # TOML table -> DomainsConfig fields ("sampling." for SamplingConfig fields)
    "domains": {"run": "domains", "layer": "layer", "domain_candidates": "domain_candidates",
                "controls": "controls", "batch_size": "batch_size"},
    "sampling": {"candidates": "sampling.candidates", "per_quintile": "sampling.per_stratum",
                 "n_strata": "sampling.n_strata", "min_tokens": "sampling.min_tokens",
                 "max_tokens": "sampling.max_tokens", "batch_size": "sampling.batch_size"},
    "analyses": {"n_resamples": "n_resamples", "n_permutations": "n_permutations", "null_draws": "null_draws",
                 "confidence": "confidence", "seed": "seed"},
}


def _domains_config(doc: dict[str, Any], p: Path) -> Any:
    from geoprobe.scan.domains import DomainsConfig

    top: dict[str, Any] = {}
    sampling: dict[str, Any] = {}
    keys: dict[str, str] = {}
    for section, key, field_name, value in _entries(doc, _DOMAIN_SECTIONS, p):
        keys[field_name.removeprefix("sampling.")] = f"{section}.{key}"
        if field_name.startswith("sampling."):
            sampling[field_name.removeprefix("sampling.")] = value
        elif field_name == "domains":
            top["domains"] = None if value == "all" else value
        else:
            top[field_name] = value
    _typed(DomainsConfig, top, p, keys)
    _typed(SamplingConfig, sampling, p, keys)
    if top.get("domains") is not None:
        top["domains"] = tuple(top["domains"])
    return DomainsConfig(sampling=_sampling({**asdict(SamplingConfig()), **sampling}), **top)
