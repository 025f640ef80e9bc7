"""Edits of the value vectors during the forward pass, per KV head, at every position.

For a KV head h with unit axis direction u = ``axis.direction[h]`` and value x (d_head):

* ``cut``   (strength λ ∈ [0, 1]):  x' = x − λ (x·u) u      (λ = 1 removes the component along u)
* ``only``  (strength λ ∈ [0, 1]):  x' = x − λ (x − (x·u) u) (λ = 1 keeps only (x·u) u)
* ``shift`` (strength k, any real): x' = x + k σ_h u,  σ_h = ``axis.sigma[h]``

The edit uses the mechanism capture reads through (``geoprobe.models.attention``): geoprobe's
attention function applies it (``Probe.edits``) to the value tensor as the attention receives
it — after projections and any value norm, one row per KV head (GQA: ``n_kv_heads``; MHA:
one per head) — immediately before the model's own attention function runs, so every query
head of a group reads the same edited value, at every position. Architectures that compute
attention inline (GPT-Neo, Bloom, MPT, XGLM, OpenAI GPT, ..., see ``legacy.INLINE``) get the
edit on the output of their V projection, split by its description (Bloom's fused QKV
included), which is the value tensor their attention reads.

``intervened(model, {layer: Edit})`` switches the edits on, off again on exit, and raises
``InterventionError`` if a requested edit never ran during the block (e.g. a layer index that
matches nothing, or no forward pass at all): an intervention that silently does nothing is an
error, never a null result.
"""

from __future__ import annotations

import math
import numbers
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import torch
from jaxtyping import Float

from geoprobe.intervene.axis import Axis, InterventionError
from geoprobe.intervene.config import OPS, Op  # noqa: F401 - their home is config (no torch), imported from here before
from geoprobe.models.architecture import editing
from geoprobe.models.loading import LoadedModel


@dataclass(frozen=True, eq=False)
class Edit:
    """One operation with one strength along one axis."""

    axis: Axis
    op: Op = "cut"
    strength: float = 1.0

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise InterventionError(f"operation {self.op!r} is not one of {'|'.join(OPS)}; pass --op cut|only|shift")
        s = float(self.strength)
        if not math.isfinite(s):
            raise InterventionError(f"strength {self.strength} is not a finite number; fix --strength")
        if self.op in ("cut", "only") and not 0.0 <= s <= 1.0:
            raise InterventionError(
                f"{self.op} strength {self.strength} is outside [0, 1]; pass --strength between 0 and 1"
            )
        object.__setattr__(self, "strength", s)

    def apply(self, x: Float[torch.Tensor, "*batch kv_head d_head"]) -> Float[torch.Tensor, "*batch kv_head d_head"]:
        """Edit values x (..., Hkv, d_head); returns a new tensor of the same dtype."""
        u = torch.as_tensor(self.axis.direction, dtype=torch.float64, device=x.device)
        xd = x.double()
        proj = (xd * u).sum(-1, keepdim=True)
        lam = self.strength
        if self.op == "cut":
            out = xd - lam * proj * u
        elif self.op == "only":
            out = xd - lam * (xd - proj * u)
        else:
            sigma = torch.as_tensor(self.axis.sigma, dtype=torch.float64, device=x.device)[:, None]
            out = xd + lam * sigma * u
        return out.to(x.dtype)


def resolve_layer(layer: int, n_layers: int) -> int:
    """A layer index (negative counts from the end) → 0..n_layers-1, or a one-line error."""
    if isinstance(layer, bool) or not isinstance(layer, numbers.Integral):
        raise InterventionError(f"layer {layer!r} is not an integer; fix --layers")
    layer = int(layer)
    idx = layer + n_layers if layer < 0 else layer
    if not 0 <= idx < n_layers:
        raise InterventionError(
            f"layer {layer} is out of range for a model with {n_layers} layers (0..{n_layers - 1}, or "
            f"-{n_layers}..-1 from the end); fix --layers"
        )
    return idx


def check_edits(model: LoadedModel, edits: Mapping[int, Edit]) -> dict[int, Edit]:
    """Resolve negative layers and check every axis shape against the model's layout."""
    if not edits:
        raise InterventionError("no edits given; pass at least one layer with --layers")
    lay = model.layout
    out: dict[int, Edit] = {}
    for layer, edit in edits.items():
        idx = resolve_layer(layer, lay.n_layers)
        if idx in out:
            raise InterventionError(f"layer {layer} is requested twice (as {idx}); fix --layers")
        if not isinstance(edit, Edit):
            raise InterventionError(f"edit for layer {layer} is a {type(edit).__name__}, not an Edit")
        h = lay.heads(idx)
        if edit.axis.shape != (h.n_kv_heads, h.d_head):
            raise InterventionError(
                f"axis for layer {layer} has shape {edit.axis.shape}; this model's values there are "
                f"(kv_heads, d_head) = ({h.n_kv_heads}, {h.d_head})"
            )
        out[idx] = edit
    return out


@dataclass
class Applied:
    """How many times each layer's edit ran (one count per hook call, i.e. per forward pass)."""

    counts: dict[int, int] = field(default_factory=dict)


def value_hook(model: LoadedModel, layer: int, edit: Edit, applied: Applied) -> Any:
    """The edit of layer ``layer`` as ``Probe.edits`` takes it: values (batch, pos, kv_head, d_head)
    in, edited values out; each call counts once in ``applied.counts[layer]``."""
    h = model.layout.heads(layer)

    def fn(x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or x.shape[2] != h.n_kv_heads or x.shape[-1] != h.d_head:
            raise InterventionError(
                f"values of layer {layer} have shape {tuple(x.shape)}, not (batch, pos, {h.n_kv_heads}, "
                f"{h.d_head}); this architecture's value layout is not supported"
            )
        applied.counts[layer] += 1
        return edit.apply(x)

    return fn


@contextmanager
def intervened(model: LoadedModel, edits: Mapping[int, Edit]) -> Iterator[Applied]:
    """Apply ``edits`` ({layer: Edit}) to the value vectors of every forward pass of
    ``model.hf_model`` inside the block.

    Yields an ``Applied`` whose ``counts[layer]`` says how often each edit ran. On a normal
    exit, any edit that never ran raises ``InterventionError``. The edits are off again after
    the block in every case. Inside an active probe (``probing``) the edits join it, so what it
    records at an edited layer is the edited values."""
    resolved = check_edits(model, edits)
    applied = Applied({layer: 0 for layer in resolved})
    model_layer = model.layout.model_layers
    fns = {model_layer[layer]: value_hook(model, layer, e, applied) for layer, e in resolved.items()}
    with editing(model.hf_model, model.arch, edits=fns):
        yield applied
    never = [layer for layer, c in applied.counts.items() if c == 0]
    if never:
        raise InterventionError(
            f"edit(s) at layer(s) {never} never ran: no forward pass of the model inside the intervened block "
            f"reached the attention of layer {never[0]}; run model.hf_model inside the block"
        )
