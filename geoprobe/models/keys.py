"""Why a layer has no W_K: what geoprobe finds its keys to be, in words that are true.

``architecture.inspect_model`` keeps W_K where one of the layer's linear projections reproduces
its keys (q/k norms named like ``k_norm`` switched off). Where none does, capture and scan say
why. Two findings are told apart here:

* the keys are a projection's x·W_K *rescaled per head and token* at position 0 (rotary is the
  identity there) and, rotated back where geoprobe can turn the model's rotary back, at the final
  position: a norm that only rescales each head's key acts on them where geoprobe does not switch
  it off (Llama 4's ``qk_norm``, a weightless L2 norm applied after rotary; a rotation keeps a
  vector's length, so the two commute; geoprobe does not turn Llama 4's complex rotary back);
* nothing of the sort: no linear map of the layer's input gives them (multi-head latent attention,
  whose keys pass through a latent and a norm, and whose q/k are wider than its values).
"""

from __future__ import annotations

from typing import Any

import torch
from jaxtyping import Float

from geoprobe.models.projections import ProjSpec

#: per-row cosine above which two (token, head) rows count as positive multiples of each other
_COS = 1 - 1e-8


def rescaled_fit(
    specs: list[ProjSpec],
    attn: Any,
    x: Float[torch.Tensor, "n d_model"],
    target: Float[torch.Tensor, "n head d"],
) -> ProjSpec | None:
    """The first description whose x·W_K gives ``target`` up to a positive factor per (token, head)."""
    for spec in specs:
        if spec.linear(attn).weight.shape[0 if spec.transposed else 1] != x.shape[-1]:
            continue
        with torch.no_grad():
            y = spec.project(attn, x).double().cpu()  # the probe's records are in host memory
        if y.shape != target.shape:
            continue
        if bool((torch.nn.functional.cosine_similarity(y, target.double().cpu(), dim=-1) > _COS).all()):
            return spec
    return None


def norm_children(attn: Any) -> list[str]:
    """'name: Class' of the children of ``attn`` that are norms (by class name)."""
    return [f"{n}: {type(c).__name__}" for n, c in attn.named_children() if "norm" in type(c).__name__.lower()]


def rescaled_reason(layer: int, spec: ProjSpec, attn: Any, checked_last: bool) -> str:
    """The keys of ``layer`` are ``spec``'s x·W_K rescaled per head and token (what was checked, where)."""
    norms = ", ".join(norm_children(attn)) or "no child named a norm"
    where = (
        "at the first and the final position"
        if checked_last
        else "at position 0, where rotary is the identity (later positions are rotated by a rotary geoprobe does "
        "not turn back)"
    )
    return (
        f"the keys of layer {layer} are x·W_K of {spec.module} rescaled per head and token {where}: a norm that only "
        f"rescales each head's key and that geoprobe does not switch off ({norms}); so they are not a linear map of "
        "the layer's input and no W_K gives them"
    )


def no_linear_map_reason(layer: int, d_key: int | None, d_value: int) -> str:
    wider = (
        f"; its q/k are {d_key} wide where its values are {d_value}, as in multi-head latent attention, "
        "which compresses keys through a latent and a norm"
        if d_key is not None and d_key != d_value
        else ""
    )
    return f"no linear map of the input of layer {layer} reproduces its keys{wider}, so there is no W_K to measure"
