"""Typed attention sites and the head geometry of a model (what every capture is shaped by)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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


@dataclass(frozen=True)  # field equality and hashing as before (every field is an int or a tuple)
class Layout(Record):
    """Head geometry of a model. ``kv_group[h]`` is the KV head that query head ``h`` reads."""

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

    def __post_init__(self) -> None:
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads {self.n_heads} is not a multiple of n_kv_heads {self.n_kv_heads}")
        if len(self.sliding_window) != self.n_layers:
            raise ValueError("sliding_window needs one entry per layer")
        if self.layer_ids is not None and len(self.layer_ids) != self.n_layers:
            raise ValueError("layer_ids needs one entry per attention layer")
        per = self.n_heads // self.n_kv_heads
        object.__setattr__(self, "kv_group", tuple(h // per for h in range(self.n_heads)))

    @property
    def d_qk(self) -> int:
        """Width of each head's query and key."""
        return self.d_head if self.d_key is None else self.d_key

    @property
    def model_layers(self) -> tuple[int, ...]:
        """The model's layer number of each attention layer."""
        return tuple(range(self.n_layers)) if self.layer_ids is None else self.layer_ids
