"""Undoing a model's rotary embedding with the model's own ``apply_rotary_pos_emb``.

geoprobe reports pre-rotary queries and keys: it rotates the final position's q/k back by −θ with
the very function the attention module used, and the cos/sin pair the module received
(``position_embeddings``). What varies between modeling files is read from the function's
signature (:class:`RotaryCall`), not written per architecture:

* how many tensors it rotates: ``(q, k, cos, sin, …)`` returns both (Llama and nearly every
  model), ``(x, cos, sin, …)`` (Gemma 3n/4) and ``(tensor, sin, cos)`` (GPT-J and CodeGen from
  transformers 5.24) return one; the parameters without a default are the tensors and the pair;
* which of the pair is the sine, the one to negate: by its name. The module passes
  ``position_embeddings`` in the order the function takes them (Llama: ``cos, sin =
  position_embeddings``; GPT-J: ``sin, cos = position_embeddings``), so the pair is handed over in
  the order it was received;
* how wide the rotated slice is: GPT-J and CodeGen rotate only the first ``rotary_dim`` dims and
  pass the function half that width of sin/cos (they repeat-interleave it inside), Llama-style
  partial rotary passes the rotated dims alone, GPT-NeoX's passes the whole head and the function
  keeps the rest. :func:`rotated_width` finds it by a quarter turn on a width the function runs on
  (the whole head, the pair's width, twice it): the dims that move are the rotated ones.

The final position alone is rotated, so a (batch, head, 1, d) tensor and a (batch, 1, r) pair
broadcast the same way in a heads-first function (which unsqueezes the pair at dim 1) and a
sequence-first one (GPT-J, which indexes ``sin[:, :, None, :]``)."""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Any, Callable

import torch
from jaxtyping import Float

from geoprobe.errors import GeoprobeError


@dataclass(frozen=True)
class RotaryCall:
    """How to call one ``apply_rotary_pos_emb``: ``n_tensors`` (1 or 2) tensors, then the pair of
    ``position_embeddings`` in the order received; ``sine`` (0 or 1) is the one that is the sine."""

    fn: Callable
    n_tensors: int
    sine: int

    @classmethod
    def of(cls, fn: Callable) -> RotaryCall:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
        names = [p.name for p in params]
        if len(names) not in (3, 4) or "sin" not in names[-2:]:
            raise GeoprobeError(
                f"{getattr(fn, '__module__', '?')}.apply_rotary_pos_emb{inspect.signature(fn)}: geoprobe reads "
                "(q, k, cos, sin), (x, cos, sin) or (tensor, sin, cos) and cannot tell how to rotate back with this one"
            )
        return cls(fn, len(names) - 2, names[-2:].index("sin"))

    def turn(self, t: torch.Tensor, pair: tuple[torch.Tensor, torch.Tensor], sign: float) -> torch.Tensor:
        """``t`` (batch, head, 1, r) rotated by ``sign`` × the angle of ``pair`` (each (batch, 1, w))."""
        a, b = pair
        a, b = (sign * a, b) if self.sine == 0 else (a, sign * b)
        out = self.fn(*([t] * self.n_tensors), a, b)
        return out[-1] if self.n_tensors == 2 else out


def rotated_width(call: RotaryCall, d: int, pair: tuple[torch.Tensor, torch.Tensor]) -> int:
    """How many leading dims of a d-wide head the function rotates with this ``pair`` (each (batch, 1,
    w)). It is called on the first width among d, w and 2w (not above d) that it runs on, with a
    quarter turn (cos 0, sin 1), which moves every rotated dim of a generic vector and no other: GPT-NeoX's
    function takes the whole head and passes the dims past w through itself, Llama-style partial rotary
    is handed the w rotated dims alone, GPT-J's the 2w dims its half-width sin/cos cover."""
    w = int(pair[0].shape[-1])
    key = (call, d, w)
    if key in _WIDTHS:  # the width follows from the shapes alone: found once per layer, not per batch
        return _WIDTHS[key]
    _WIDTHS[key] = width = _measured_width(call, d, w, pair)
    return width


#: (call, head width, pair width) -> the rotated width
_WIDTHS: dict[tuple[RotaryCall, int, int], int] = {}


def _measured_width(call: RotaryCall, d: int, w: int, pair: tuple[torch.Tensor, torch.Tensor]) -> int:
    quarter = [torch.zeros_like(pair[0]), torch.zeros_like(pair[1])]
    quarter[call.sine] = torch.ones_like(pair[call.sine])
    for r in dict.fromkeys((d, w, 2 * w)):
        if r > d:
            continue
        t = torch.linspace(1.0, 2.0, r, dtype=pair[0].dtype, device=pair[0].device).expand(pair[0].shape[0], 1, 1, r)
        try:
            out = call.turn(t, (quarter[0], quarter[1]), 1.0)
        except RuntimeError:  # shapes that do not broadcast: not this width
            continue
        if out.shape[-1] != r:
            continue
        moved = (out != t).reshape(-1, r).any(dim=0).nonzero()
        return int(moved.max()) + 1 if len(moved) else 0
    raise GeoprobeError(
        f"{getattr(call.fn, '__module__', '?')}.apply_rotary_pos_emb rotates none of the widths {d}, {w}, {2 * w} of "
        "a head; geoprobe cannot tell which dims it rotates"
    )


def unrotate(
    call: RotaryCall,
    x: Float[torch.Tensor, "batch head d"],
    pair: tuple[torch.Tensor, torch.Tensor],
) -> Float[torch.Tensor, "batch head d"]:
    """Undo a rotary embedding on one position per row; ``pair`` is the final position's
    ``position_embeddings`` (each (batch, w)), in the order the module received them.

    Rotating by −θ undoes the rotation up to cos² + sin² (m², YaRN's attention factor squared,
    else 1), which is measured per dim by rotating a vector of ones forth and back, and divided
    out. Dims past the rotated width (partial rotary) are kept as they are."""
    p = (pair[0][:, None, :].to(x.dtype), pair[1][:, None, :].to(x.dtype))
    x4 = x[:, :, None, :]
    r = rotated_width(call, x.shape[-1], p)
    if r == 0:
        return x
    head, rest = x4[..., :r], x4[..., r:]
    ones = torch.ones_like(head)
    back = call.turn(head, p, -1.0) / call.turn(call.turn(ones, p, 1.0), p, -1.0)
    return torch.cat([back, rest], dim=-1)[:, :, 0]


def rotary_function(module: Any) -> RotaryCall | None:
    """The ``apply_rotary_pos_emb`` of the attention module's own modeling file, if it has one."""
    fn = getattr(sys.modules[type(module).__module__], "apply_rotary_pos_emb", None)
    return None if fn is None else RotaryCall.of(fn)
