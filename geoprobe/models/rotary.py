"""A model's own rotary embedding, called the way its modeling file calls it.

Every transformers modeling file with rotary attention defines ``apply_rotary_pos_emb``; its
signature says how to call it, so nothing here is written per architecture. The forms
transformers 5.23 and 5.24 ship:

* ``(q, k, cos, sin, unsqueeze_dim=1)``: two tensors, returns the pair (Llama and ~170 others);
* ``(x, cos, sin, unsqueeze_dim=1)``: one tensor (Gemma 3n, Gemma 4, DeepSeek-V4);
* ``(tensor, sin, cos)``: one tensor, sin first; each cos/sin entry covers an interleaved pair
  of dims and the module passes the function only its first ``rotary_dim`` dims (GPT-J, CodeGen).

The tensor parameters are those before the first of ``cos``/``sin``; a result with several
tensors is the key's (``k``) where the function has one, else the first. A module receives
``position_embeddings`` in the order its function takes the pair (each modeling file unpacks the
tuple and passes it on in that order: ``sin, cos`` for GPT-J), so the pair is passed through as
received, and rotating back negates the one the signature names ``sin``. geoprobe rotates one
position at a time, (batch, head, 1, d) with cos/sin as (batch, 1, r): seq-first and heads-first
layouts are then the same tensor, and whichever dim the function unsqueezes, cos/sin broadcast.

The width the function accepts is found by trying: all d dims (it rotates what it is given, or
picks its slice itself), else the first ``r`` (the pair's width; the module slices, as in Phi
or StableLM) or the first ``2r`` (one entry per interleaved pair, as in GPT-J): the first width
whose result has the input's shape. The dims beyond it are kept as they are. How many dims it
rotates (``Layout.rotary_dim``) is measured: a quarter turn of distinct values changes every
rotated dim and no other.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable

import torch
from jaxtyping import Float

TRIG = ("cos", "sin")

Pair = tuple[torch.Tensor, torch.Tensor]  # position_embeddings as the module receives them, one position


@dataclass(frozen=True)
class RotaryFunction:
    """``apply_rotary_pos_emb`` of one modeling file and how its signature says to call it."""

    fn: Callable[..., Any]
    n_tensors: int  # tensor parameters before the pair (q, k: 2; x: 1)
    out_index: int  # which returned tensor is the rotated key (0 for a function returning one)
    sin_index: int  # where sin is in the pair (GPT-J: 0)

    @classmethod
    def read(cls, fn: Callable[..., Any] | None) -> RotaryFunction | None:
        """The adapter for ``fn``, or None where its signature has no ``cos``/``sin`` pair after a tensor."""
        if fn is None:
            return None
        try:
            names = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            return None
        at = next((i for i, n in enumerate(names) if n in TRIG), None)
        if not at or sorted(names[at : at + 2]) != sorted(TRIG):
            return None
        tensors = names[:at]
        return cls(fn, at, tensors.index("k") if "k" in tensors else 0, names[at : at + 2].index("sin"))

    def _call(self, x: torch.Tensor, pair: Pair, sign: float) -> torch.Tensor:
        """``x`` (batch, head, 1, w) rotated by the pair, (batch, 1, r); ``sign`` -1 turns back."""
        a, b = (p if p.dtype == x.dtype else p.to(x.dtype) for p in pair)
        a, b = (sign * a, b) if self.sin_index == 0 else (a, sign * b)
        out = self.fn(*([x] * self.n_tensors), a, b)
        return out[self.out_index] if isinstance(out, (tuple, list)) else out

    def width(self, pair: Pair, d: int) -> int:
        """The width of the leading slice the function accepts (see the module docstring); 0: none.
        It follows from the shapes alone, so it is found once per (function, pair width, d): unrotate
        runs for every layer of every batch."""
        return _accepted_width(self, int(pair[0].shape[-1]), d)

    def turn(
        self, x: Float[torch.Tensor, "batch head d"], pair: Pair, sign: float = 1.0, width: int | None = None
    ) -> Float[torch.Tensor, "batch head d"]:
        """Rotate one position per row by the pair (batch, r) (``sign`` -1: by minus the angle), on
        the leading ``width`` dims (None: the width the function accepts)."""
        w = self.width(pair, x.shape[-1]) if width is None else width
        if not w:
            raise ValueError(f"{self.fn.__module__}.apply_rotary_pos_emb accepts no slice of a width-{x.shape[-1]} key")
        c = tuple(p[:, None, :] for p in pair)
        out = self._call(x[:, :, None, :w], c, sign)[:, :, 0]
        return torch.cat([out, x[..., w:]], dim=-1)

    def rotated_dims(self, pair: Pair, d: int) -> int:
        """How many of d dims the function rotates: a quarter turn (cos 0, sin 1) of 1..d changes exactly those."""
        zero, one = torch.zeros_like(pair[0][:1]).float(), torch.ones_like(pair[0][:1]).float()
        quarter = (one, zero) if self.sin_index == 0 else (zero, one)
        x = torch.arange(1, d + 1, dtype=torch.float32, device=pair[0].device)[None, None, :]
        return int((self.turn(x, quarter) != x).sum())


def unrotate(
    rotary: RotaryFunction,
    x: Float[torch.Tensor, "batch head d"],
    pair: Pair,
    divisor: Float[torch.Tensor, "batch 1 d"] | None = None,
) -> Float[torch.Tensor, "batch head d"]:
    """Undo the rotary embedding on one position per row with the model's own function.

    ``pair`` (batch, r each) is the final position's ``position_embeddings`` as the module
    received it. Rotating by -θ undoes the rotation up to cos² + sin² (m², YaRN's attention
    factor squared, else 1), which is measured per dim by rotating a vector of ones forth and
    back (:func:`unrotation_divisor`; pass it when several tensors share the pair), and divided
    out; dims the function does not rotate come back as they were."""
    w = rotary.width(pair, x.shape[-1])
    if divisor is None:
        divisor = unrotation_divisor(rotary, pair, x.shape[-1], x.dtype)
    return rotary.turn(x, pair, -1.0, w) / divisor


def unrotation_divisor(rotary: RotaryFunction, pair: Pair, d: int, dtype: torch.dtype) -> torch.Tensor:
    """(batch, 1, d): a vector of ones turned by the pair and back, what :func:`unrotate` divides by. It
    depends on the pair alone (not on the head), so one serves every head and every layer given the pair."""
    w = rotary.width(pair, d)
    ones = torch.ones(pair[0].shape[0], 1, d, dtype=dtype, device=pair[0].device)
    return rotary.turn(rotary.turn(ones, pair, 1.0, w), pair, -1.0, w)


@functools.lru_cache(maxsize=None)
def _accepted_width(rotary: RotaryFunction, r: int, d: int) -> int:
    """:meth:`RotaryFunction.width` for a pair of width ``r`` and a head of ``d`` dims."""
    c = (torch.ones(1, 1, r), torch.ones(1, 1, r))
    for w in dict.fromkeys((d, r, 2 * r)):
        if w > d:
            continue
        x = torch.ones(1, 1, 1, w)
        try:
            if rotary._call(x, c, 1.0).shape == x.shape:
                return w
        except RuntimeError:
            continue
    return 0


def rotation_tolerance(dtype: torch.dtype) -> float:
    """Relative error within which a key turned back by the model's rotary equals its projection: 1e-4
    in float32; in half precision eight units of its roundoff (bfloat16 0.0625, float16 0.0078), since
    the pair and the key are rounded to it. A key left rotated is off by O(1) at the final position.
    (A float32 tolerance in bfloat16 took every layer for post-rotary: keys were captured rotated.)"""
    return max(1e-4, 8 * torch.finfo(dtype).eps) if dtype.is_floating_point else 1e-4
