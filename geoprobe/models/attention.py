"""Final-token attention read through transformers' ``AttentionInterface``.

A decoder that computes attention through ``ALL_ATTENTION_FUNCTIONS`` (every modern
transformers architecture) calls one function per attention layer with the query, key and
value *as the scores use them* (after projections, q/k norms and rotary), the mask (causal,
sliding window, padding), ``scaling``, ``softcap`` and attention sinks. While geoprobe reads a
model, its function sits there under the name of the model's own implementation (``sdpa`` or
``eager``, :func:`installed`), so the model takes every branch and builds every mask as it does
without geoprobe. It calls the stock function of that implementation for the real output, so the
forward pass is the model's, and then, only while a
:class:`Probe` is active (a ``contextvars`` variable), computes from the final query row of
each batch row its distribution over the keys and its entropy: O(T·d) per head, never the
T×T score matrix. It also keeps q, k, v and the attention output z at the final token, and
can edit the values before the stock function runs (``Probe.edits``, interventions) and the
attention output z after it, before the output projection (``Probe.out_edits``, head
ablations).
"""

from __future__ import annotations

import contextvars
import math
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
from jaxtyping import Float

from geoprobe.errors import GeoprobeError, UnsupportedArchitectureError
from geoprobe.models.language import text_config
from geoprobe.models.rotary import RotaryFunction, unrotate, unrotation_divisor

PREFIX = "geoprobe_"  # the name of its wrapper functions
BASES = ("sdpa", "eager")
_LN2 = math.log(2.0)
_ACTIVE: contextvars.ContextVar["Probe | None"] = contextvars.ContextVar("geoprobe_probe", default=None)

ValueEdit = Callable[[torch.Tensor], torch.Tensor]  # (batch, pos, kv_head, d_head) -> same shape
OutEdit = Callable[[torch.Tensor], torch.Tensor]  # (batch, pos, head, d_v) -> same shape


def entropy_bits(p: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Shannon entropy in bits along ``dim``; zero-probability entries contribute 0."""
    return torch.special.entr(p.double()).sum(dim) / _LN2


def final_row_distribution(
    query_last: Float[torch.Tensor, "batch head d"],
    key: Float[torch.Tensor, "batch kv_head pos d"],
    last: torch.Tensor,
    mask_row: torch.Tensor | None = None,
    scaling: float | None = None,
    softcap: float | None = None,
    sinks: torch.Tensor | None = None,
    bias_row: torch.Tensor | None = None,
) -> tuple[Float[torch.Tensor, "batch head pos"], Float[torch.Tensor, "batch head"] | None]:
    """The final query's attention over every key, and the mass on the sink (None without sinks).

    ``key`` is not repeated across query-head groups (query head h reads KV head h // G).
    ``mask_row`` is the final query's row of the layer's mask, (batch, 1|head, pos): bool
    (True = attend) or additive float; None means causal (keys up to ``last[b]``). ``sinks``
    (head,), or (batch, head) where each query has its own (Inkling 2), are the logits of a virtual
    key that takes mass but has no value (gpt-oss, Granite-SWA). With sinks, the returned
    distribution is the one over the real keys (it sums to 1: the attention given that it goes to a
    token) and the sink's mass is returned beside it: one definition for every sink architecture,
    whatever its eager ``output_attentions`` returns (gpt-oss leaves the sink's mass out,
    Granite-SWA renormalises). Scores are computed in float32."""
    B, Hq, d = query_last.shape
    Hkv, T = key.shape[1], key.shape[2]
    s = torch.einsum("bkgd,bktd->bkgt", query_last.float().reshape(B, Hkv, Hq // Hkv, d), key.float())
    s = s.reshape(B, Hq, T) * (d**-0.5 if scaling is None else scaling)
    if softcap is not None:
        s = torch.tanh(s / softcap) * softcap
    if bias_row is not None:
        s = s + bias_row.float()
    if mask_row is None:
        keep = torch.arange(T, device=s.device)[None, :] <= last.to(s.device)[:, None]
        s = s.masked_fill(~keep[:, None, :], float("-inf"))
    elif mask_row.dtype == torch.bool:
        s = s.masked_fill(~mask_row.to(s.device), float("-inf"))
    else:
        s = s + mask_row.float().to(s.device)
    p = torch.softmax(s, dim=-1)
    if sinks is None:
        return p, None
    sink = sinks.float().to(s.device).reshape(-1, Hq, 1).expand(B, Hq, 1)  # (head,) or (batch, head)
    return p, torch.softmax(torch.cat([s, sink], dim=-1), dim=-1)[..., -1]


@dataclass
class LayerRecord:
    """What one attention layer left at the final real token of each batch row (float32; in host memory,
    or on the model's device where the probe says ``host=False``)."""

    layer: int
    q: torch.Tensor | None = None  # (batch, head, d_qk)
    k: torch.Tensor | None = None  # (batch, kv_head, d_qk)
    v: torch.Tensor | None = None  # (batch, kv_head, d_v)
    z: torch.Tensor | None = None  # (batch, head, d_v), attention output before the output projection
    entropy: torch.Tensor | None = None  # (batch, head), bits
    distribution: torch.Tensor | None = None  # (batch, head, pos), when asked for
    sink_mass: torch.Tensor | None = None  # (batch, head), models with attention sinks
    window: int | None = None  # the sliding window the layer was called with
    calls: int = 0


def _rows_at(x: torch.Tensor, last: torch.Tensor, dim: int, rows: torch.Tensor | None = None) -> torch.Tensor:
    """``x[b, ..., last[b], ...]`` along position axis ``dim`` (1 or 2), as a copy (``rows``: the batch
    rows' arange on x's device, when the caller has it)."""
    if rows is None or rows.device != x.device:
        rows = torch.arange(x.shape[0], device=x.device)
    if last.device != x.device:
        last = last.to(x.device)
    return x[rows, last] if dim == 1 else x[rows, :, last]


@dataclass
class Probe:
    """What to keep from each attention call while active (see :func:`active`).

    ``last[b]`` is the final real position of batch row ``b`` (None: the final position).
    ``pre_rotary`` undoes the rotary embedding on the recorded q/k with the model's own
    rotation and the cos/sin pair the layer received (``rotary`` holds them per layer, set by a
    pre-hook); layers in ``post_rotary_layers`` keep what the scores used."""

    queries: bool = True
    keys: bool = True
    values: bool = True
    attn_out: bool = True
    attention: bool = True
    distribution: bool = False
    pre_rotary: bool = True
    edits: dict[int, ValueEdit] = field(default_factory=dict)  # model layer -> edit of every position's values
    out_edits: dict[int, OutEdit] = field(default_factory=dict)  # model layer -> edit of the attention output z
    only: frozenset[int] | None = None  # model layers to record (None: all)
    last: torch.Tensor | None = None
    layer_of: Callable[[Any], int | None] | None = None  # None for a module that is no attention layer
    records: dict[int, LayerRecord] = field(default_factory=dict)
    rotary: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    rotary_functions: dict[int, RotaryFunction] = field(default_factory=dict)
    #: per batch: the final positions' pair of each ``position_embeddings`` the layers received (by id:
    #: most models pass every layer the same one), and the unrotation divisor of each pair
    pairs: dict[tuple[int, int], tuple[Any, Any]] = field(default_factory=dict)
    divisors: dict[tuple[Any, ...], torch.Tensor] = field(default_factory=dict)
    post_rotary_layers: frozenset[int] = frozenset()
    #: False: records stay on the model's device (the caller copies a batch's records out at once, as
    #: geoprobe.capture does: no copy to the host, and so no wait for the device, inside the forward pass)
    host: bool = True
    calls: list[int] = field(default_factory=list)
    edited: dict[int, int] = field(default_factory=dict)

    @classmethod
    def silent(cls) -> "Probe":
        """A probe that records nothing (geoprobe's function runs, the model's own output comes back)."""
        return cls(queries=False, keys=False, values=False, attn_out=False, attention=False)

    def new_batch(self, last: torch.Tensor | None) -> None:
        self.last, self.records, self.rotary, self.calls = last, {}, {}, []
        self.pairs, self.divisors = {}, {}

    def layer(self, module: Any) -> int | None:
        if self.layer_of is not None:
            return self.layer_of(module)
        return layer_index(module)

    def final_positions(self, batch: int, length: int, device: Any) -> torch.Tensor:
        if self.last is None:
            return torch.full((batch,), length - 1, dtype=torch.long, device=device)
        return self.last if self.last.device == torch.device(device) else self.last.to(device)

    def edit_values(self, module: Any, value: torch.Tensor) -> torch.Tensor:
        """Apply this layer's edit to every position's values (batch, kv_head, pos, d)."""
        layer = self.layer(module)
        fn = self.edits.get(layer)
        if fn is None:
            return value
        self.edited[layer] = self.edited.get(layer, 0) + 1
        return fn(value.transpose(1, 2)).transpose(1, 2).to(value.dtype)

    def edit_output(self, module: Any, out: torch.Tensor) -> torch.Tensor:
        """Apply this layer's out-edit to the attention output z (batch, pos, head, d_v)."""
        fn = self.out_edits.get(self.layer(module))
        return out if fn is None else fn(out).to(out.dtype)

    def record(
        self,
        module: Any,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None,
        out: torch.Tensor | None,
        scaling: float | None,
        softcap: float | None = None,
        sinks: torch.Tensor | None = None,
        bias: torch.Tensor | None = None,
        window: int | None = None,
    ) -> None:
        """One interface call: query (B, Hq, T, d), key/value (B, Hkv, T, d), out (B, T, Hq, d_v)."""
        layer = self.layer(module)
        if layer is None:
            return  # not one of the model's attention layers (geoprobe.models.layers)
        self.calls.append(layer)
        if self.only is not None and layer not in self.only:
            return
        if not (self.queries or self.keys or self.values or self.attn_out or self.attention):
            return  # a probe that only edits
        rec = self.records.setdefault(layer, LayerRecord(layer))
        rec.calls += 1
        rec.window = window
        B, _, T, _ = query.shape
        last = self.final_positions(B, T, query.device)
        rows = torch.arange(B, device=query.device) if last.shape[0] == B else None
        with torch.no_grad():
            q_last = _rows_at(query, last, 2, rows)
            q, k = self._unrotate(
                layer, q_last if self.queries else None, _rows_at(key, last, 2, rows) if self.keys else None
            )
            if self.queries:
                rec.q = self._keep(q)
            if self.keys:
                rec.k = self._keep(k)
            if self.values:
                rec.v = self._keep(_rows_at(value, last, 2, rows))
            if self.attn_out and out is not None:
                rec.z = self._keep(_rows_at(out, last, 1, rows))
            if self.attention:
                mask_row = None
                if mask is not None:
                    m = mask if mask.shape[0] == B else mask.expand(B, *mask.shape[1:])
                    # one column per key (DeepSeek-V4 appends compressed keys after the T positions)
                    mask_row = (m[:, :, 0] if m.shape[2] == 1 else _rows_at(m, last, 2))[..., : key.shape[2]]
                bias_row = None if bias is None else _rows_at(bias.expand(B, *bias.shape[1:]), last, 2)
                if sinks is not None and sinks.dim() == 4:  # a sink logit per query (batch, head, pos, 1): Inkling 2
                    sinks = _rows_at(sinks.expand(B, *sinks.shape[1:]), last, 2)[..., 0]
                p, sink = final_row_distribution(q_last, key, last, mask_row, scaling, softcap, sinks, bias_row)
                self.keep_distribution(rec, p, sink)

    def keep_distribution(self, rec: LayerRecord, p: torch.Tensor, sink: torch.Tensor | None = None) -> None:
        rec.entropy = self._keep(entropy_bits(p))
        rec.sink_mass = None if sink is None else self._keep(sink)
        if self.distribution:
            rec.distribution = self._keep(p)

    def _keep(self, x: torch.Tensor) -> torch.Tensor:
        """A recorded slice as float32: copied to the host, or left where it is (``host=False``)."""
        return x.float().cpu() if self.host else x.float()

    def _unrotate(
        self, layer: int, q: torch.Tensor | None, k: torch.Tensor | None
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The pre-rotary vectors of the final-token q and k slices (batch, head, d; either may be None),
        turned back together in one call of the model's rotary where their widths agree, divided by the
        pair's :func:`unrotation_divisor`, computed once per pair and batch (layers share the pair)."""
        if not self.pre_rotary or layer in self.post_rotary_layers or layer not in self.rotary:
            return q, k
        rf, pair = self.rotary_functions[layer], self.rotary[layer]

        def back(x: torch.Tensor) -> torch.Tensor:
            key = (id(pair[0]), id(pair[1]), x.shape[-1], x.dtype)
            if key not in self.divisors:
                self.divisors[key] = unrotation_divisor(rf, pair, x.shape[-1], x.dtype)
            return unrotate(rf, x, pair, self.divisors[key])

        if q is not None and k is not None and q.shape[-1] == k.shape[-1] and q.dtype == k.dtype:
            both = back(torch.cat([q, k], dim=1))
            return both[:, : q.shape[1]], both[:, q.shape[1] :]
        return (None if q is None else back(q)), (None if k is None else back(k))


def rotary_function(module: Any) -> RotaryFunction | None:
    """The ``apply_rotary_pos_emb`` of the attention module's own modeling file, read from its
    signature (``rotary.py``); None where it has none or one geoprobe cannot call."""
    return RotaryFunction.read(getattr(sys.modules[type(module).__module__], "apply_rotary_pos_emb", None))


def layer_index(module: Any) -> int:
    for name in ("layer_idx", "layer_id", "layer_number"):
        v = getattr(module, name, None)
        if isinstance(v, int):
            return v
    raise UnsupportedArchitectureError(
        f"attention module {type(module).__name__} has no layer_idx; geoprobe cannot tell which "
        "layer it is (this architecture is not supported)",
        reason="no-layer-index",
    )


def current() -> Probe | None:
    """The probe active in this context (None outside :func:`active` and ``probing``)."""
    return _ACTIVE.get()


@contextmanager
def current_set(probe: Probe) -> Iterator[Probe]:
    """Make ``probe`` the current one (what :func:`current` returns) without switching any model's
    attention implementation: for the inline-attention exceptions, read by hooks instead."""
    token = _ACTIVE.set(probe)
    try:
        yield probe
    finally:
        _ACTIVE.reset(token)


# -- installation ----------------------------------------------------------------------------
#: the function geoprobe's ``sdpa`` wraps: what ALL_ATTENTION_FUNCTIONS held when geoprobe installed itself
_STOCK_SDPA: list[Callable] = []
_depth: dict[tuple[str, int], int] = {}
_previous: dict[tuple[str, int], tuple[Callable | None, bool]] = {}


def _stock(base: str, module: Any) -> Callable:
    if base == "eager":  # each modeling file has its own eager function (softcap, sinks, ...)
        fn = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
        if fn is None:
            raise GeoprobeError(
                f"{type(module).__name__}: its modeling file has no eager_attention_forward; "
                "geoprobe cannot run its eager attention (not supported)"
            )
        return fn
    return _STOCK_SDPA[-1]


def _make(base: str) -> Callable:
    def attention(
        module: Any,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        *args: Any,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, Any]:
        probe = _ACTIVE.get()
        fn = _stock(base, module)
        if probe is None:
            return fn(module, query, key, value, attention_mask, *args, **kwargs)
        if module.training and (kwargs.get("dropout") or 0.0) > 0:
            raise GeoprobeError(
                f"{type(module).__name__} is in training mode with attention dropout; geoprobe "
                "measures the deterministic model: call model.eval() first"
            )
        if probe.edits:
            value = probe.edit_values(module, value)
        out, weights = fn(module, query, key, value, attention_mask, *args, **kwargs)
        if probe.out_edits:
            out = probe.edit_output(module, out)
        scaling = kwargs.get("scaling", args[1] if len(args) > 1 else None)
        probe.record(
            module,
            query,
            key,
            value,
            attention_mask,
            out,
            scaling,
            kwargs.get("softcap"),
            kwargs.get("s_aux", kwargs.get("sinks")),
            kwargs.get("position_bias"),
            kwargs.get("sliding_window"),
        )
        return out, weights

    attention.__name__ = f"{PREFIX}{base}"
    return attention


_WRAPPERS = {base: _make(base) for base in BASES}


def interfaces(hf_model: Any) -> list[Any]:
    """Every ``AttentionInterface`` ``hf_model``'s attention may read: transformers' library-wide
    ``ALL_ATTENTION_FUNCTIONS`` and any instance a modeling file keeps for itself (Doge's module-level
    ``ALL_ATTENTION_FUNCTIONS = AttentionInterface()``, which sees the library's functions but not
    another instance's local entries)."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, AttentionInterface

    found = [ALL_ATTENTION_FUNCTIONS]
    for name in sorted({type(m).__module__ for m in hf_model.modules()}):
        for value in vars(sys.modules[name]).values() if name in sys.modules else ():
            if isinstance(value, AttentionInterface) and all(value is not f for f in found):
                found.append(value)
    return found


@contextmanager
def installed(base: str, extra: tuple[Any, ...] = ()) -> Iterator[None]:
    """geoprobe's function in transformers' ``ALL_ATTENTION_FUNCTIONS`` (and in the interfaces of
    ``extra``, :func:`interfaces`) under the implementation's own name (``sdpa`` or ``eager``) inside
    the block; what was there before is put back on exit.

    Under its own name every branch a modeling file takes on ``config._attn_implementation`` (the
    sparse-attention indexers of DeepSeek-V3.2 and GLM-5 fold their top-k into the mask only for
    ``eager``/``sdpa``; GPT-2's eager upcasts) is the branch the model takes without geoprobe, and
    the mask is the one its implementation builds. Nested blocks share one installation."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS as functions

    library = type(functions)().get(base)  # a fresh interface holds only the library-wide mapping
    targets = [functions, *(f for f in extra if f is not functions)]
    for mapping in targets:
        key = (base, id(mapping))
        if _depth.get(key, 0) == 0:
            held = mapping.get(base)
            _previous[key] = (held, held is library)
            if mapping is functions and base == "sdpa":
                _STOCK_SDPA.append(held)
            mapping[base] = _WRAPPERS[base]
        _depth[key] = _depth.get(key, 0) + 1
    try:
        yield
    finally:
        for mapping in reversed(targets):
            key = (base, id(mapping))
            _depth[key] -= 1
            if _depth[key] == 0:
                held, from_library = _previous.pop(key)
                if from_library:
                    del mapping[base]  # the local entry geoprobe added; the library's shows again
                else:
                    mapping[base] = held
                if mapping is functions and base == "sdpa":
                    _STOCK_SDPA.pop()


def base_implementation(hf_model: Any) -> str:
    """The implementation geoprobe's function wraps: the model's own (sdpa or eager; any other, flash
    attention for one, is run as sdpa while geoprobe reads it), as its language model's config says
    (a multimodal model's top-level class may support no other)."""
    impl = text_config(hf_model.config)._attn_implementation or "eager"
    return impl if impl in BASES else "sdpa"


@contextmanager
def active(hf_model: Any, probe: Probe) -> Iterator[Probe]:
    """Run ``hf_model``'s attention through geoprobe's function (under the name of its own
    implementation, :func:`installed`) with ``probe`` recording; everything is put back on exit,
    also after an error."""
    text = text_config(hf_model.config)
    previous = text._attn_implementation
    base = base_implementation(hf_model)
    token = _ACTIVE.set(probe)
    try:
        if previous != base:
            hf_model.set_attn_implementation(base)
        with installed(base, tuple(interfaces(hf_model))):
            yield probe
    finally:
        _ACTIVE.reset(token)
        if text._attn_implementation != previous:
            hf_model.set_attn_implementation(previous)
