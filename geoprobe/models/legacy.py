"""The hand-written exceptions: architectures whose attention bypasses ``AttentionInterface``.

Falcon calls ``torch.nn.functional.scaled_dot_product_attention`` itself. While geoprobe
probes it (:func:`inline_sdpa`), that function is replaced by one that, only inside a Falcon
attention module (a pre-hook marks which one runs), hands the call's q, k, v, mask (ALiBi is
folded into it) and output to the same :class:`Probe` the interface function uses, then calls
torch's own. Its q/k/v layout and W_K are then identified like any interface architecture's.

GPT-Neo, Bloom and GPT-J before transformers 5.24 (which moved GPT-J to AttentionInterface:
``inspect_model`` then reads it like any other model) compute attention inline, eager only (Bloom adds ALiBi with
``baddbmm`` inside its module), so no registered function ever sees their keys. Their
modules return the attention probabilities beside the output, so a forward hook on each
attention module reads the final query row of those (their own computation, ALiBi and
local windows included); q, k and v come from the projections described here by hand (the
only per-architecture lines geoprobe has), pre-rotary, and z from the input of the output
projection. Eager is their only implementation, so this costs nothing beyond their own
forward pass. Value edits (``Probe.edits``) run on the output of the V projection, split by
its description (Bloom's fused ``query_key_value`` included), and out-edits
(``Probe.out_edits``) on the input of the output projection.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator

import torch

from geoprobe.models.attention import LayerRecord, Probe, current_set
from geoprobe.models.projections import ProjSpec

LEGACY_TYPES = ("gpt_neo", "gptj", "bloom")
#: architectures that call torch's SDPA inline (probed by :func:`inline_sdpa`)
INLINE_SDPA_TYPES = ("falcon",)
#: the output projection of each (its input is z, the attention output per head)
_OUT_PROJ = {"gpt_neo": "out_proj", "gptj": "out_proj", "bloom": "dense"}


def legacy_specs(cfg: Any) -> tuple[ProjSpec, ProjSpec, ProjSpec]:
    """(W_Q, W_K, W_V) descriptions, written out from each modeling file:
    GPT-Neo and GPT-J: separate ``q_proj``/``k_proj``/``v_proj`` with all heads;
    Bloom: ``query_key_value`` viewed as (heads, 3, d_head) (``BloomAttention._reshape``)."""
    H = cfg.num_attention_heads
    d = cfg.hidden_size // H
    if cfg.model_type == "bloom":
        return tuple(ProjSpec("query_key_value", H, (1, 1, 1), i, d) for i in range(3))  # type: ignore[return-value]
    return tuple(ProjSpec(name, 1, (H,), 0, d) for name in ("q_proj", "k_proj", "v_proj"))  # type: ignore[return-value]


def legacy_windows(cfg: Any, n_layers: int) -> tuple[int | None, ...]:
    if cfg.model_type == "gpt_neo":
        return tuple(cfg.window_size if t == "local" else None for t in cfg.attention_layers)
    return (None,) * n_layers


def legacy_rotary_dim(cfg: Any) -> int:
    if cfg.model_type == "gptj":
        return int(cfg.rotary_dim or cfg.hidden_size // cfg.num_attention_heads)
    return 0


@contextmanager
def legacy_hooks(
    model_type: str, modules: dict[int, Any], probe: Probe, specs: tuple[ProjSpec, ProjSpec, ProjSpec]
) -> Iterator[Probe]:
    """Record into ``probe`` from the attention modules' returned probabilities and projections."""
    q_spec, k_spec, v_spec = specs
    handles = []
    inputs: dict[int, torch.Tensor] = {}
    edited_v: dict[int, torch.Tensor] = {}

    for layer, module in modules.items():

        def pre(mod: Any, args: tuple, kwargs: dict, _layer: int = layer) -> None:
            x = args[0] if args else kwargs["hidden_states"]
            B, T = x.shape[:2]
            inputs[_layer] = x[torch.arange(B, device=x.device), probe.final_positions(B, T, x.device)]

        def post(mod: Any, args: tuple, kwargs: dict, output: Any, _layer: int = layer) -> None:
            probs = output[1]
            probe.calls.append(_layer)
            rec = probe.records.setdefault(_layer, LayerRecord(_layer))
            rec.calls += 1
            B, _, T, _ = probs.shape
            last = probe.final_positions(B, T, probs.device)
            with torch.no_grad():
                x = inputs.pop(_layer)
                if probe.attention:
                    probe.keep_distribution(rec, probs[torch.arange(B, device=probs.device), :, last].float())
                for on, spec, name in (
                    (probe.queries, q_spec, "q"),
                    (probe.keys, k_spec, "k"),
                    (probe.values, v_spec, "v"),
                ):
                    if on:
                        setattr(rec, name, spec.project(mod, x).float().cpu())
                if probe.values and _layer in edited_v:  # what attention read: the edited values
                    rec.v = edited_v.pop(_layer)

        def v_post(lin: Any, args: tuple, output: torch.Tensor, _layer: int = layer) -> torch.Tensor | None:
            fn = probe.edits.get(_layer)
            if fn is None:
                return None
            probe.edited[_layer] = probe.edited.get(_layer, 0) + 1
            y = v_spec.edit_output(output, fn)
            if probe.values:
                B, T = y.shape[:2]
                rows = torch.arange(B, device=y.device)
                edited_v[_layer] = v_spec.part(y)[rows, probe.final_positions(B, T, y.device)].detach().float().cpu()
            return y

        def z_pre(mod: Any, args: tuple, _layer: int = layer) -> tuple | None:
            z = args[0]
            B, T = z.shape[:2]
            edit = probe.out_edits.get(_layer)
            if edit is not None:
                z = edit(z.reshape(B, T, q_spec.n_heads, -1)).reshape(z.shape).to(z.dtype)
            if probe.attn_out:
                sl = z[torch.arange(B, device=z.device), probe.final_positions(B, T, z.device)]
                rec = probe.records.setdefault(_layer, LayerRecord(_layer))
                rec.z = sl.reshape(B, q_spec.n_heads, -1).detach().float().cpu()
            return None if edit is None else (z, *args[1:])

        handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(module.register_forward_hook(post, with_kwargs=True))
        handles.append(getattr(module, _OUT_PROJ[model_type]).register_forward_pre_hook(z_pre))
        handles.append(v_spec.linear(module).register_forward_hook(v_post))
    try:
        yield probe
    finally:
        for h in handles:
            h.remove()


@contextmanager
def inline_sdpa(modules: Iterable[Any], probe: Probe) -> Iterator[Probe]:
    """Probe attention modules that call ``torch.nn.functional.scaled_dot_product_attention``
    themselves (Falcon). Keys and values that the module broadcast to every query head
    (Falcon's new decoder architecture) are recorded and edited once per KV head
    (``module.num_kv_heads``). Not thread-safe: the torch function is replaced for the block."""
    import torch.nn.functional as F

    original = F.scaled_dot_product_attention
    running: list[Any] = []
    handles = []

    def enter(mod: Any, args: tuple) -> None:
        running.append(mod)

    def leave(mod: Any, args: tuple, out: Any) -> None:
        running.pop()

    for m in modules:
        handles.append(m.register_forward_pre_hook(enter))
        handles.append(m.register_forward_hook(leave))

    def sdpa(
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attn_mask: torch.Tensor | None = None,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: float | None = None,
        **kw: Any,
    ) -> torch.Tensor:
        if not running:
            return original(
                query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, **kw
            )
        module = running[-1]
        n_kv = int(getattr(module, "num_kv_heads", key.shape[1]))
        g = query.shape[1] // n_kv if key.shape[1] == query.shape[1] and n_kv < query.shape[1] else 1
        if probe.edits:
            edited = probe.edit_values(module, value[:, ::g])
            value = edited.repeat_interleave(g, dim=1) if g > 1 else edited
        out = original(
            query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, **kw
        )
        if probe.out_edits:
            out = probe.edit_output(module, out.transpose(1, 2)).transpose(1, 2)
        probe.record(module, query, key[:, ::g], value[:, ::g], attn_mask, out.transpose(1, 2), scale)
        return out

    F.scaled_dot_product_attention = sdpa
    try:
        with current_set(probe):
            yield probe
    finally:
        F.scaled_dot_product_attention = original
        for h in handles:
            h.remove()
