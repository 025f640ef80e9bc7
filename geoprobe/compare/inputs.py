"""Reading the inputs of ``geoprobe compare``: results files, their prompt sets, architectures.

A scan's prompt set is read from ``ScanResult.prompt_set`` (``{"name", "kind", "hash", "seed",
...}``) when the result has one, else from ``config.prompts`` (the name) and
``provenance["prompts_hash"]`` (the hash of the exact prompt texts).

Role of a result in the comparison: **restricted** when its set is a single domain (a corpus
set other than ``mixed``, or ``prompt_set["domain"]``), **mixed** otherwise (``mixed``,
``builtin``, or a user's file).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geoprobe.errors import GeoprobeError
from geoprobe.paths import read_regular
from geoprobe.serial import Record

#: single-domain corpus sets (issue 4); a corpus set of another name that is not "mixed" is a domain too
KNOWN_DOMAINS = ("encyclopedic", "news", "fiction", "code", "math", "philosophy", "qa", "quotations")
MIXED_NAMES = ("mixed", "builtin", "all")
ROLES = ("mixed", "restricted")
SET_KINDS = ("builtin", "corpus", "file")


def short_hash(h: str | None) -> str:
    """The first 12 hex characters of a hash, or ``(no hash)``."""
    if not h:
        return "(no hash)"
    return h.split(":", 1)[-1][:12]


@dataclass(frozen=True, eq=False)
class Source(Record):
    """One results file given to compare, and the prompt set it was computed on.

    ``set_hash`` is the prompt set's own hash (``prompt_set["hash"]``, else ``prompts_hash``);
    ``prompts_hash`` is the sha256 of the exact prompt texts (provenance), which decides whether
    two results were computed on the same prompts."""

    path: str
    model: str
    role: str
    set_name: str
    set_kind: str
    domain: str | None
    set_hash: str
    prompts_hash: str
    seed: int | None
    n_prompts: int
    capture_dir: str | None = None  # absolute path of the saved capture, if the result names one

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role {self.role!r} is not one of {ROLES}")
        if self.set_kind not in SET_KINDS:
            raise ValueError(f"prompt-set kind {self.set_kind!r} is not one of {SET_KINDS}")
        if (self.role == "restricted") != (self.domain is not None):
            raise ValueError(f"a {self.role} source has domain {self.domain!r}")
        if self.n_prompts < 1:
            raise ValueError(f"n_prompts={self.n_prompts} must be >= 1")

    @property
    def key(self) -> tuple[str, str, str]:
        """Two sources with the same key are the same scan given twice."""
        return (self.model, self.set_name, self.prompts_hash or self.set_hash)

    @property
    def label(self) -> str:
        return self.set_name if self.domain is None else self.domain


def results_path(path: str | Path) -> Path:
    """The results.json a path names (the file, or a run directory holding one); a one-line
    GeoprobeError naming the path when it is neither."""
    p = Path(path)
    if p.is_dir() and (p / "results.json").exists():  # a FIFO there is refused by the reader, never waited on
        return p / "results.json"
    if not p.exists() or p.is_dir():
        what = "a directory without results.json" if p.is_dir() else "not an existing file"
        raise GeoprobeError(
            f"{str(path)!r} is {what}; compare expects the results.json written by geoprobe scan "
            "(or the run directory that holds it)"
        )
    return p


def load_result(path: str | Path) -> tuple[Path, Any]:
    """(results file, ScanResult); every failure is a one-line GeoprobeError naming the path."""
    from geoprobe.scan.result import ScanResult

    p = results_path(path)
    return p, ScanResult.load(p)  # ResultsError (a GeoprobeError) names the file and what was expected


def _classify(prompt_set: dict[str, Any] | None, config_prompts: str) -> tuple[str, str, str | None]:
    """(kind, name, domain) of a scan's prompt set."""
    ps = prompt_set if isinstance(prompt_set, dict) else {}
    name = str(ps.get("name") or config_prompts)
    kind = ps.get("kind")
    if kind not in SET_KINDS:
        if name == "builtin":
            kind = "builtin"
        elif name in KNOWN_DOMAINS or name == "mixed":
            kind = "corpus"
        else:
            kind = "file"
    domain = ps.get("domain")
    if not isinstance(domain, str) or not domain or domain in MIXED_NAMES:
        domain = name if kind == "corpus" and name not in MIXED_NAMES else None
    return kind, name, domain


def describe(path: Path, result: Any) -> Source:
    """The Source record of a loaded result."""
    ps = getattr(result, "prompt_set", None)
    ps = ps if isinstance(ps, dict) else None
    kind, name, domain = _classify(ps, result.config.prompts)
    prov = result.provenance or {}
    prompts_hash = str(prov.get("prompts_hash") or (ps or {}).get("hash") or "")
    set_hash = str((ps or {}).get("hash") or prompts_hash)
    seed = (ps or {}).get("seed", prov.get("seed", result.config.seed))
    capture = None
    if result.capture_dir:
        capture = str((path.parent / result.capture_dir).resolve())
    return Source(
        path=str(path),
        model=str(result.model),
        role="restricted" if domain else "mixed",
        set_name=name,
        set_kind=kind,
        domain=domain,
        set_hash=set_hash,
        prompts_hash=prompts_hash,
        seed=None if seed is None else int(seed),
        n_prompts=int(result.n_prompts),
        capture_dir=capture,
    )


# -- whose capture ----------------------------------------------------------------------------
#: what a capture's provenance must share with its results for compare to use it
CAPTURE_MATCH = ("model_id", "weights", "dtype", "prompts_hash")


def _shown(key: str, value: Any) -> str:
    text = str(value)
    return repr(text[:19] + "…" if key in ("weights", "prompts_hash") and len(text) > 20 else text)


def check_capture(src: Source, result: Any) -> None:
    """Refuse, in one line naming the run, a capture that is not the one its results were computed
    from: its capture.json must record the same model, weights, dtype and prompts hash as the
    results' provenance, and hold prompts of that hash. The capture.json is read only when it is a
    regular file (a FIFO is refused, never waited on); no arrays are read. A run without its
    capture directory is left to the callers (the table falls back, the global PCA notes it)."""
    from geoprobe.provenance import prompts_hash

    if not src.capture_dir:
        return
    meta_path = Path(src.capture_dir) / "capture.json"
    if not meta_path.exists() and not meta_path.is_symlink():
        return
    run = str(Path(src.path).parent)
    shown = str(Path(run) / str(result.capture_dir) / "capture.json")  # as the user named the run
    fix = f"put back the capture that geoprobe scan wrote into {run!r}, or scan again there with --force"

    def refuse(why: str) -> GeoprobeError:
        return GeoprobeError(f"run {run!r}: its capture file {shown!r} {why}; {fix}")

    try:
        meta = json.loads(read_regular(meta_path, refuse))
    except OSError as exc:
        raise refuse(f"cannot be read ({exc.strerror or exc})") from None
    except ValueError:
        raise refuse("is not valid JSON") from None
    prov = meta.get("provenance") if isinstance(meta, dict) else None
    if not isinstance(prov, dict):
        raise refuse("records no provenance")
    ours = result.provenance or {}
    for key in CAPTURE_MATCH:
        if key in ours and prov.get(key) != ours[key]:
            raise GeoprobeError(
                f"run {run!r}: its capture was not made with its results: {key} is {_shown(key, prov.get(key))} in "
                f"{shown!r} but {_shown(key, ours[key])} in {src.path!r}; compare uses a capture only with "
                f"the results it was analysed into: {fix}"
            )
    prompts = meta.get("prompts")
    if ours.get("prompts_hash") and (
        not isinstance(prompts, list)
        or not all(isinstance(t, str) for t in prompts)
        or prompts_hash(prompts) != ours["prompts_hash"]
    ):
        raise GeoprobeError(
            f"run {run!r}: the prompts in {shown!r} are not the ones its results were computed on "
            f"(their sha256 is not {_shown('prompts_hash', ours['prompts_hash'])}); {fix}"
        )


# -- architecture -----------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Architecture(Record):
    """What the Table-2 row says about a model's architecture (None: not known from the inputs)."""

    family: str
    attention: str
    n_layers: int
    n_heads: int | None = None
    n_kv_heads: int | None = None
    d_head: int | None = None
    d_model: int | None = None
    source: str = "results"  # where the head layout came from: capture | registry | results

    def __post_init__(self) -> None:
        if self.n_layers < 1:
            raise ValueError(f"n_layers={self.n_layers} must be >= 1")
        for name in ("n_heads", "n_kv_heads", "d_head", "d_model"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"{name}={v} must be >= 1")


def _family_and_config(model_id: str, provenance: dict[str, Any]) -> tuple[str, dict | None]:
    """Family name from the registry (alias, Hub id or ``twin:ALIAS:scale``) and the registry's
    config (None for twins, whose sizes may be scaled down, and for unknown models)."""
    from geoprobe.models.registry import ALIASES, find_spec_by_hf_id

    if isinstance(provenance.get("family"), str):
        return provenance["family"], None
    twin = model_id.split(":")
    if len(twin) >= 2 and twin[0] == "twin" and twin[1] in ALIASES:
        return f"{ALIASES[twin[1]].family} (twin)", None
    spec = ALIASES.get(model_id) or find_spec_by_hf_id(model_id)
    if spec is None:
        return "unknown", None
    return spec.family, spec.hf_config_dict()


def _attention_label(n_heads: int | None, n_kv: int | None, window: Any = None) -> str:
    if n_heads is None or n_kv is None:
        return "n/a"
    from geoprobe.models.registry import attention_kind

    return attention_kind({"num_attention_heads": n_heads, "num_key_value_heads": n_kv, "sliding_window": window})


def capture_layout(capture_dir: str | None) -> dict[str, Any] | None:
    """The head layout stored in a capture's capture.json (no arrays read); None if absent."""
    if not capture_dir:
        return None
    meta = Path(capture_dir) / "capture.json"
    try:
        layout = json.loads(read_regular(meta, lambda why: ValueError(why))).get("layout")
    except (OSError, ValueError, AttributeError):  # missing, a FIFO (never waited on), not JSON, not an object
        return None
    return layout if isinstance(layout, dict) else None


def architecture(result: Any, capture_dirs: list[str | None]) -> Architecture:
    """From the first capture that has a layout, else the registry's config, else what the
    results themselves say (n_layers; KV heads and d_head from the key-orthogonality shapes)."""
    family, cfg = _family_and_config(str(result.model), result.provenance or {})
    for cdir in capture_dirs:
        lay = capture_layout(cdir)
        if lay is not None:
            try:
                window = next((w for w in lay.get("sliding_window", ()) if w), None)
                return Architecture(
                    family,
                    _attention_label(lay["n_heads"], lay["n_kv_heads"], window),
                    int(lay["n_layers"]),
                    int(lay["n_heads"]),
                    int(lay["n_kv_heads"]),
                    int(lay["d_head"]),
                    int(lay["d_model"]),
                    "capture",
                )
            except (KeyError, TypeError, ValueError):
                continue
    if cfg is not None and cfg.get("num_attention_heads"):
        from geoprobe.models.registry import effective_sliding_window

        n_h = int(cfg["num_attention_heads"])
        n_kv = int(cfg.get("num_key_value_heads") or n_h)
        d_model = cfg.get("hidden_size") or cfg.get("d_model")
        d_head = cfg.get("head_dim") or (int(d_model) // n_h if d_model else None)
        return Architecture(
            family,
            _attention_label(n_h, n_kv, effective_sliding_window(cfg)),
            int(result.n_layers),
            n_h,
            n_kv,
            None if d_head is None else int(d_head),
            None if d_model is None else int(d_model),
            "registry",
        )
    o = result.orthogonality
    n_kv = None if o is None else int(o.per_head.shape[1])
    return Architecture(
        family,
        "n/a",
        int(result.n_layers),
        None,
        n_kv,
        None if o is None else int(o.d_head),
        None if o is None else int(o.d_model),
        "results",
    )


def resolve_layer(layer: int, n_layers: int, captured: tuple[int, ...], where: str) -> int:
    """Model layer index of ``layer`` (negative counts from the model's last layer); a one-line
    error naming the result when that layer was not analysed."""
    idx = layer + n_layers if layer < 0 else layer
    if idx not in captured:
        raise GeoprobeError(
            f"layer {layer} (model layer {idx} of 0..{n_layers - 1}) was not analysed in {where}; "
            f"analysed layers: {list(captured)}; pass --layer with one of them (default -1, the last)"
        )
    return idx


def early_layers(n_layers: int, captured: tuple[int, ...], early_fraction: float) -> tuple[int, ...]:
    """Captured layers among the model's first ``max(1, ceil(early_fraction · n_layers))``."""
    cut = max(1, math.ceil(early_fraction * n_layers - 1e-9))
    return tuple(x for x in captured if x < cut)
