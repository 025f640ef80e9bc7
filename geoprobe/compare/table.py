"""The analogue of Table 2 of arXiv 2512.23752: one row per model.

Columns: architecture; value manifold PC1 and PC1+PC2 at the chosen layer (default the last)
for the mixed prompt set and for each single-domain (restricted) set; key orthogonality in the
early layers (mean over the captured layers among the model's first ⌈f·L⌉ of the per-layer mean
|cos| between W_K columns, with the same mean for the random-init baseline when the scan had
one); attention focusing (% entropy reduction from the first to the last captured layer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from geoprobe.analysis.stats import Estimate
from geoprobe.compare.inputs import Architecture, Source, early_layers, short_hash
from geoprobe.serial import Record

#: the paper's Table 2 (final layer, PC1 / PC1+PC2 %): (model, mixed PC1, mixed PC1+PC2, math PC1, math PC1+PC2)
PAPER_TABLE2: tuple[tuple[str, float, float, float, float], ...] = (
    ("Pythia-410M", 79.6, 99.7, 58.0, 99.9),
    ("Phi-2", 46.4, 60.6, 52.2, 63.5),
    ("Llama-3.2-1B", 36.6, 51.4, 52.5, 73.6),
)
PAPER = "arXiv 2512.23752"

_NAN = Estimate(math.nan, math.nan, math.nan)


@dataclass(frozen=True, eq=False)
class SetEntry(Record):
    """Value-manifold PC1 and PC1+PC2 of one result (one model on one prompt set) at ``layer``."""

    set_name: str
    domain: str | None
    set_hash: str
    n_prompts: int
    layer: int
    pc1: Estimate
    pc12: Estimate
    path: str

    def __post_init__(self) -> None:
        if self.n_prompts < 1 or self.layer < 0:
            raise ValueError(f"n_prompts={self.n_prompts} must be >= 1 and layer={self.layer} >= 0")
        for e in (self.pc1, self.pc12):
            if not isinstance(e, Estimate) or not (math.isnan(e.value) or -1e-9 <= e.value <= 1 + 1e-9):
                raise ValueError(f"explained-variance ratio {e} is not an Estimate in [0, 1]")

    @property
    def label(self) -> str:
        return self.domain or self.set_name


def set_entry(source: Source, result: Any, layer: int) -> SetEntry:
    m = result.manifold
    if m is None:
        pc1 = pc12 = _NAN
    else:
        i = m.layers.index(layer)
        pc1, pc12 = m.pc1[i], m.pc12[i]
    return SetEntry(
        set_name=source.set_name,
        domain=source.domain,
        set_hash=source.set_hash,
        n_prompts=source.n_prompts,
        layer=layer,
        pc1=pc1,
        pc12=pc12,
        path=source.path,
    )


@dataclass(frozen=True, eq=False)
class ComparisonRow(Record):
    """One model's Table-2 row. ``key_cos_early`` is NaN when no early layer was analysed;
    ``focusing`` None when no result had the focusing analysis."""

    model: str
    architecture: Architecture
    mixed: SetEntry | None
    restricted: tuple[SetEntry, ...]
    early_layers: tuple[int, ...]
    key_cos_early: float
    key_cos_early_init: float | None = None
    key_cos_gaussian: float | None = None
    init_label: str | None = None
    focusing: Estimate | None = None
    focusing_p: float = math.nan
    focusing_set: str | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "restricted", tuple(self.restricted))
        set_(self, "early_layers", tuple(int(x) for x in self.early_layers))
        if self.mixed is None and not self.restricted:
            raise ValueError(f"row {self.model!r} needs a mixed or a restricted entry")
        if self.mixed is not None and self.mixed.domain is not None:
            raise ValueError("the mixed entry has a domain")
        domains = [e.domain for e in self.restricted]
        if any(d is None for d in domains) or len(set(domains)) != len(domains):
            raise ValueError(f"restricted entries need distinct domains, got {domains}")
        for name in ("key_cos_early", "key_cos_early_init", "key_cos_gaussian"):
            v = getattr(self, name)
            if v is None:
                continue
            v = float(v)
            if not (math.isnan(v) or -1e-9 <= v <= 1 + 1e-9):
                raise ValueError(f"{name}={v} must lie in [0, 1]")
            set_(self, name, v)
        if self.focusing is not None and not isinstance(self.focusing, Estimate):
            raise ValueError("focusing must be an Estimate")
        set_(self, "focusing_p", float(self.focusing_p))

    @property
    def entries(self) -> tuple[SetEntry, ...]:
        return ((self.mixed,) if self.mixed is not None else ()) + self.restricted


def build_row(
    model: str,
    arch: Architecture,
    mixed: tuple[Source, Any] | None,
    restricted: list[tuple[Source, Any]],
    layer_of: dict[str, int],
    early_fraction: float,
) -> tuple[ComparisonRow, list[str]]:
    """The row of one model and the notes it raises. ``layer_of`` maps a source path to the
    model layer used for it; orthogonality (weights, prompt-independent) and focusing come from
    the mixed result when there is one, else from the first restricted one."""
    notes: list[str] = []
    mixed_entry = None if mixed is None else set_entry(mixed[0], mixed[1], layer_of[mixed[0].path])
    rest = tuple(set_entry(s, r, layer_of[s.path]) for s, r in restricted)
    ordered = ([mixed] if mixed is not None else []) + list(restricted)
    o_src = next(((s, r) for s, r in ordered if r.orthogonality is not None), None)
    early, cos, cos_init, gauss, label = (), math.nan, None, None, None
    if o_src is None:
        notes.append(f"{model}: no result has the key-orthogonality analysis; its early-layer |cos| is n/a")
    else:
        o = o_src[1].orthogonality
        early = early_layers(o_src[1].n_layers, o.layers, early_fraction)
        if not early:
            notes.append(
                f"{model}: none of the analysed layers {list(o.layers)} lies in the first "
                f"{early_fraction:.0%} of its {o_src[1].n_layers} layers; early-layer |cos| is n/a"
            )
        else:
            idx = [o.layers.index(x) for x in early]
            cos = float(np.mean([o.layer_mean[i] for i in idx]))
            init = o.init_layer_mean
            if init is not None:
                cos_init, label = float(np.mean([init[i] for i in idx])), o.init_label
            gauss = float(o.gaussian)
    f_src = next(((s, r) for s, r in ordered if r.focusing is not None), None)
    focusing, p, f_set = None, math.nan, None
    if f_src is not None:
        focusing, p, f_set = f_src[1].focusing.reduction, f_src[1].focusing.reduction_p, f_src[0].label
    row = ComparisonRow(
        model=model,
        architecture=arch,
        mixed=mixed_entry,
        restricted=rest,
        early_layers=early,
        key_cos_early=cos,
        key_cos_early_init=cos_init,
        key_cos_gaussian=gauss,
        init_label=label,
        focusing=focusing,
        focusing_p=p,
        focusing_set=f_set,
    )
    return row, notes


# -- display ------------------------------------------------------------------------------------
def pct(e: Estimate | None, ci: bool = True) -> str:
    """``79.6 [77.1, 82.0]`` (percent of a fraction), or n/a."""
    if e is None or math.isnan(e.value):
        return "n/a"
    if not ci:
        return f"{100 * e.value:.1f}"
    return format(Estimate(100 * e.value, 100 * e.low, 100 * e.high, e.confidence), ".1f")


def _num(x: float | None, digits: int = 3) -> str:
    """n/a where undefined; never -0.000 (geoprobe.text.number)."""
    from geoprobe.text import number

    return number(x, f".{digits}f")


def _int(x: int | None) -> str:
    return "n/a" if x is None else str(x)


def display_rows(rows: tuple[ComparisonRow, ...]) -> list[dict[str, str]]:
    """Formatted rows: one per model and restricted domain (one with n/a when there is none)."""
    out = []
    for r in rows:
        a = r.architecture
        foc = "n/a" if r.focusing is None else format(r.focusing, ".1f")
        early = f"{_num(r.key_cos_early)}" + (
            f" (layers {r.early_layers[0]}–{r.early_layers[-1]})" if r.early_layers else ""
        )
        base = {
            "model": r.model,
            "family": a.family,
            "attention": a.attention,
            "layers": str(a.n_layers),
            "heads": _int(a.n_heads),
            "kv heads": _int(a.n_kv_heads),
            "d_head": _int(a.d_head),
            "mixed PC1 %": pct(r.mixed.pc1) if r.mixed else "n/a",
            "mixed PC1+PC2 %": pct(r.mixed.pc12) if r.mixed else "n/a",
        }
        tail = {
            "early key |cos|": early,
            "init |cos|": _num(r.key_cos_early_init),
            "focusing % [CI]": foc,
            "n prompts": str(r.mixed.n_prompts) if r.mixed else "n/a",
            "prompt set": (f"{r.mixed.set_name} ({short_hash(r.mixed.set_hash)})" if r.mixed else "n/a"),
        }
        for e in r.restricted or (None,):
            rest = {
                "restricted set": "n/a" if e is None else e.label,
                "restricted PC1 %": "n/a" if e is None else pct(e.pc1),
                "restricted PC1+PC2 %": "n/a" if e is None else pct(e.pc12),
                "restricted n (hash)": "n/a" if e is None else f"{e.n_prompts} ({short_hash(e.set_hash)})",
            }
            out.append({**base, **rest, **tail})
    return out
