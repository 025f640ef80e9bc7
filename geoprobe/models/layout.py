"""Typed attention sites and the head geometry of a model (what every capture is shaped by)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from geoprobe.serial import Record

SiteKind = Literal["q", "k", "v", "z", "pattern"]
SITE_KINDS: tuple[SiteKind, ...] = ("q", "k", "v", "z", "pattern")


@dataclass(frozen=True)
class Site:
    """A place in layer ``layer``'s attention.

    ``q``/``k``/``v``: projections per head before rotary embedding (after any per-head
    q/k norm); ``z``: attention output per query head, before the output projection;
    ``pattern``: post-softmax attention probabilities.
    """

    layer: int
    kind: SiteKind

    def __post_init__(self) -> None:
        if self.kind not in SITE_KINDS:
            raise ValueError(f"site kind {self.kind!r} is not one of {SITE_KINDS}")
        if self.layer < 0:
            raise ValueError(f"site layer must be >= 0, got {self.layer}")


class Heads(NamedTuple):
    """One attention layer's head geometry."""

    n_heads: int
    n_kv_heads: int
    d_head: int  # width of each value (and attention output) head
    d_qk: int  # width of each query and key head


@dataclass(frozen=True)  # field equality and hashing as before (every field is an int or a tuple)
class Layout(Record):
    """Head geometry of a model. ``kv_group[h]`` is the KV head that query head ``h`` reads.

    Where attention layers differ in head counts or widths (Gemma 4's global layers, MiMo-V2-Flash,
    dots.llm3), ``layer_heads`` holds each layer's :class:`Heads` and ``n_heads``, ``n_kv_heads``,
    ``d_head`` and ``d_qk`` are the largest over the layers: the width of the captured arrays, in which a
    layer's heads fill the first ``heads(i).n_heads`` (or ``n_kv_heads``) slots and its widths the first
    ``d_head`` (``d_qk``) entries, the rest NaN (``Capture.layer`` returns a layer's own part).
    """

    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    d_model: int
    vocab_size: int
    rotary_dim: int
    sliding_window: tuple[int | None, ...]
    #: the KV head each query head reads (derived from the head counts; stored for readers of the JSON)
    kv_group: tuple[int, ...] = field(init=False, repr=False)
    #: the model's own layer number of each attention layer (hybrids skip their SSM layers); None: 0..n_layers-1
    layer_ids: tuple[int, ...] | None = field(default=None, metadata={"omit_none": True})
    #: width of q and k per head where it differs from the values' (multi-head latent attention); None: d_head
    d_key: int | None = field(default=None, metadata={"omit_none": True})
    #: each attention layer's (n_heads, n_kv_heads, d_head, d_qk) where they differ between layers; None:
    #: every layer has the scalar fields' layout. ``kv_group`` is then empty (it differs per layer).
    layer_heads: tuple[tuple[int, int, int, int], ...] | None = field(default=None, metadata={"omit_none": True})

    def __post_init__(self) -> None:
        if len(self.sliding_window) != self.n_layers:
            raise ValueError("sliding_window needs one entry per layer")
        if self.layer_ids is not None and len(self.layer_ids) != self.n_layers:
            raise ValueError("layer_ids needs one entry per attention layer")
        if self.layer_heads is None:
            if self.n_heads % self.n_kv_heads:
                raise ValueError(f"n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}")
            per = self.n_heads // self.n_kv_heads
            object.__setattr__(self, "kv_group", tuple(h // per for h in range(self.n_heads)))
            return
        heads = tuple(Heads(*(int(x) for x in h)) for h in self.layer_heads)
        if len(heads) != self.n_layers:
            raise ValueError("layer_heads needs one entry per attention layer")
        for i, h in enumerate(heads):
            if h.n_heads % h.n_kv_heads:
                raise ValueError(f"layer {i}: n_heads {h.n_heads} is not a multiple of n_kv_heads {h.n_kv_heads}")
        widest = Heads(*(max(col) for col in zip(*heads)))
        if widest != Heads(self.n_heads, self.n_kv_heads, self.d_head, self.d_qk):
            raise ValueError(f"n_heads, n_kv_heads, d_head, d_qk must be the largest of layer_heads: {tuple(widest)}")
        if len(set(heads)) == 1:
            raise ValueError("layer_heads given but every layer has the same layout: leave it None")
        object.__setattr__(self, "layer_heads", heads)
        object.__setattr__(self, "kv_group", ())

    @classmethod
    def of_layers(cls, heads: "list[Heads]", **fields: object) -> "Layout":
        """A layout from each attention layer's :class:`Heads` (``layer_heads`` only where they differ)."""
        widest = Heads(*(max(col) for col in zip(*heads)))
        varies = len(set(heads)) > 1
        return cls(
            n_heads=widest.n_heads,
            n_kv_heads=widest.n_kv_heads,
            d_head=widest.d_head,
            d_key=None if widest.d_qk == widest.d_head else widest.d_qk,
            layer_heads=tuple(heads) if varies else None,
            **fields,  # type: ignore[arg-type]
        )

    @property
    def uniform(self) -> bool:
        """Whether every attention layer has the same head layout."""
        return self.layer_heads is None

    def heads(self, i: int) -> Heads:
        """Head geometry of attention layer ``i`` (0..n_layers-1, as the captured ``layers``)."""
        if not -self.n_layers <= i < self.n_layers:
            raise IndexError(f"layer {i} out of range for {self.n_layers} attention layers")
        if self.layer_heads is None:
            return Heads(self.n_heads, self.n_kv_heads, self.d_head, self.d_qk)
        return Heads(*self.layer_heads[i])

    def kv_groups(self, i: int) -> tuple[int, ...]:
        """The KV head each query head of attention layer ``i`` reads."""
        h = self.heads(i)
        per = h.n_heads // h.n_kv_heads
        return tuple(q // per for q in range(h.n_heads))

    @property
    def d_qk(self) -> int:
        """Width of each head's query and key."""
        return self.d_head if self.d_key is None else self.d_key

    @property
    def model_layers(self) -> tuple[int, ...]:
        """The model's layer number of each attention layer."""
        return tuple(range(self.n_layers)) if self.layer_ids is None else self.layer_ids
