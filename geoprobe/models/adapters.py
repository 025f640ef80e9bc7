"""One adapter per model family: typed sites -> TransformerBridge hook names, head layout, W_K.

Every place in geoprobe that needs a hook name asks an adapter for it with a :class:`Site`;
nothing else builds or parses hook-name strings. Weight-derived key projections are read
from the Hugging Face modules with each family's own head layout written out explicitly:

* GPT-NeoX (Pythia) fuses Q, K, V into one ``query_key_value`` projection whose output rows
  are laid out **per head** as ``(heads, 3, d_head)`` — reshaping it as ``(3, heads, d_head)``
  mixes Q, K and V of different heads.
* Llama, Mistral, Mixtral, Phi and Gemma-3 have separate ``k_proj``; with grouped-query
  attention it has ``n_kv_heads`` (not ``n_heads``) heads of ``d_head`` rows.
"""
from __future__ import annotations

from typing import Any, ClassVar

import torch
from jaxtyping import Float

from geoprobe.errors import UnsupportedArchitectureError
from geoprobe.models.layout import SITE_KINDS, Layout, Site, SiteKind

__all__ = ["SITE_KINDS", "Layout", "Site", "SiteKind", "FamilyAdapter", "adapter_for", "supported_architectures"]


class FamilyAdapter:
    """Base adapter. Subclasses set ``family``, ``architectures`` and the layer path."""

    family: ClassVar[str]
    architectures: ClassVar[tuple[str, ...]]
    _attn_hooks: ClassVar[dict[str, str]] = {
        "q": "hook_q",
        "k": "hook_k",
        "v": "hook_v",
        "z": "hook_z",
        "pattern": "hook_pattern",
    }

    # -- hook names -------------------------------------------------------------------
    def hook_name(self, site: Site) -> str:
        return f"blocks.{site.layer}.attn.{self._attn_hooks[site.kind]}"

    final_norm_hook: ClassVar[str] = "ln_final.hook_out"
    #: the bridge keeps every layer's full attention pattern until the forward pass ends (memory estimate)
    keeps_patterns: ClassVar[bool] = False
    #: sites whose hook tensor is (batch, head, pos, d_head) rather than (batch, pos, head, d_head)
    _head_major: ClassVar[frozenset[str]] = frozenset()

    def at_positions(
        self, kind: SiteKind, x: torch.Tensor, pos: torch.Tensor, d_head: int
    ) -> Float[torch.Tensor, "batch head d_head"]:
        """Slice the hook tensor of ``kind`` at position ``pos[b]`` of each batch row ``b``.

        q/k/v/z come back as (batch, head, d_head); ``pattern`` as (batch, head, key_pos).
        """
        rows = torch.arange(x.shape[0], device=x.device)
        pos = pos.to(x.device)
        if kind == "pattern":  # (batch, head, query_pos, key_pos)
            return x[rows, :, pos, :]
        if x.dim() == 3:  # flat (batch, pos, head*d_head)
            x = x.reshape(x.shape[0], x.shape[1], -1, d_head)
        if kind in self._head_major:
            return x[rows, :, pos, :]
        return x[rows, pos]

    def release_forward_state(self, bridge: Any) -> None:
        """Drop tensors the bridge keeps from the last forward pass (none for most families)."""

    # -- layout -----------------------------------------------------------------------
    def layout(self, cfg: Any) -> Layout:
        n_heads = cfg.num_attention_heads
        d_head = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
        n_layers = cfg.num_hidden_layers
        return Layout(
            n_layers=n_layers,
            n_heads=n_heads,
            n_kv_heads=getattr(cfg, "num_key_value_heads", None) or n_heads,
            d_head=d_head,
            d_model=cfg.hidden_size,
            vocab_size=cfg.vocab_size,
            rotary_dim=self._rotary_dim(cfg, d_head),
            sliding_window=self._windows(cfg, n_layers),
        )

    def _rotary_dim(self, cfg: Any, d_head: int) -> int:
        """Rotated dims per head (Pythia 25 %, Phi-2 40 %, others all)."""
        rope = getattr(cfg, "rope_parameters", None) or {}
        pct = rope.get("partial_rotary_factor")
        for name in ("partial_rotary_factor", "rotary_pct"):
            if pct is None:
                pct = getattr(cfg, name, None)
        return int(d_head * (1.0 if pct is None else pct))

    def _windows(self, cfg: Any, n_layers: int) -> tuple[int | None, ...]:
        window = getattr(cfg, "sliding_window", None)
        return (window,) * n_layers

    # -- weights ----------------------------------------------------------------------
    def layers(self, hf_model: Any) -> list[Any]:
        """The HF decoder layers (unwrapped from TransformerBridge if it booted them)."""
        stack = hf_model.get_decoder().layers
        return [_unwrap(layer) for layer in stack]

    def key_weights(self, hf_model: Any, cfg: Any) -> Float[torch.Tensor, "layer kv_head d_model d_head"]:
        """W_K per layer and KV head, as (d_model, d_head) so that k = x @ W_K."""
        return torch.stack(self.key_weight_views(hf_model, cfg)).detach()

    def key_weight_views(self, hf_model: Any, cfg: Any) -> list[Float[torch.Tensor, "kv_head d_model d_head"]]:
        """Per-layer W_K as views of the weights (no copies)."""
        lay = self.layout(cfg)
        return [self._layer_key_weight(layer, lay).detach() for layer in self.layers(hf_model)]

    def _layer_key_weight(self, layer: Any, lay: Layout) -> torch.Tensor:
        w = _weight(_unwrap(layer.self_attn).k_proj)  # (n_kv*d_head, d_model)
        return w.reshape(lay.n_kv_heads, lay.d_head, lay.d_model).transpose(1, 2)


def _unwrap(module: Any) -> Any:
    """TransformerBridge keeps the HF module as ``original_component``; plain HF has none."""
    inner = getattr(module, "original_component", None)
    return inner if isinstance(inner, torch.nn.Module) else module


def _weight(linear: Any) -> torch.Tensor:
    return _unwrap(linear).weight


class LlamaAdapter(FamilyAdapter):
    family = "llama"
    architectures = ("LlamaForCausalLM",)


class MistralAdapter(FamilyAdapter):
    family = "mistral"
    architectures = ("MistralForCausalLM",)


class MixtralAdapter(FamilyAdapter):
    family = "mixtral"
    architectures = ("MixtralForCausalLM",)


class PhiAdapter(FamilyAdapter):
    family = "phi"
    architectures = ("PhiForCausalLM",)


class Gemma3Adapter(FamilyAdapter):
    """Gemma-3: per-head RMSNorm on q and k after projection; sliding-window layers."""

    family = "gemma3"
    architectures = ("Gemma3ForCausalLM",)
    _attn_hooks = {**FamilyAdapter._attn_hooks, "q": "hook_q_normed", "k": "hook_k_normed"}
    _head_major = frozenset({"q", "k"})  # the norms run on (batch, head, pos, d_head)

    def _windows(self, cfg: Any, n_layers: int) -> tuple[int | None, ...]:
        types = getattr(cfg, "layer_types", None) or ["full_attention"] * n_layers
        return tuple(cfg.sliding_window if t == "sliding_attention" else None for t in types)


class NeoXAdapter(FamilyAdapter):
    family = "gpt_neox"
    architectures = ("GPTNeoXForCausalLM",)
    keeps_patterns = True  # see release_forward_state

    def layers(self, hf_model: Any) -> list[Any]:
        return [_unwrap(layer) for layer in hf_model.gpt_neox.layers]

    def release_forward_state(self, bridge: Any) -> None:
        """TransformerBridge's fused-QKV attention keeps the last full (batch, head, pos, pos)
        pattern of every layer (``_pattern``); drop it so capture memory stays O(final token)."""
        for block in bridge.blocks:
            if getattr(block.attn, "_pattern", None) is not None:
                block.attn._pattern = None

    def _layer_key_weight(self, layer: Any, lay: Layout) -> torch.Tensor:
        fused = _weight(_unwrap(layer.attention).query_key_value)  # (heads*3*d_head, d_model)
        per_head = fused.reshape(lay.n_heads, 3, lay.d_head, lay.d_model)  # per head: q, k, v
        return per_head[:, 1].transpose(1, 2)


ADAPTERS: tuple[type[FamilyAdapter], ...] = (
    NeoXAdapter,
    PhiAdapter,
    LlamaAdapter,
    MistralAdapter,
    MixtralAdapter,
    Gemma3Adapter,
)


def supported_architectures() -> list[str]:
    return [a for cls in ADAPTERS for a in cls.architectures]


def adapter_for(architecture: str) -> FamilyAdapter:
    for cls in ADAPTERS:
        if architecture in cls.architectures:
            return cls()
    raise UnsupportedArchitectureError(
        f"architecture {architecture!r} is not supported; supported: {', '.join(supported_architectures())} "
        "(choose one of those models with --model)"
    )
